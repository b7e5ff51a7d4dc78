// headscope accuracy: what a smaller weight storage changes, on a text: the model loaded in float32 and
// in --weights (q8 by default) side by side.
//
//   headscope accuracy --model DIR --text-file F [--weights q8|f16] [--threads N] [--json]
//
// --json prints one document on stdout:
//   {"weights": "q8", "tokens": T, "dropped_tokens": D, "loss_f32": x, "loss": x, "kl_mean": x, "kl_max": x,
//    "top1_agreement": x, "attention_max_diff": x, "weight_bytes_f32": n, "weight_bytes": n}
// loss: the mean next-token cross-entropy over the T - 1 positions that predict a token in the text;
// kl: KL(p_f32 || p) of each position's next-token distribution, in nats; top1_agreement: the share of
// positions whose most likely next token is the same; attention_max_diff: the largest difference of
// any attention weight of any head. All computed in double from the two runs' float32 logits and maps.
#include "accuracy_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "options.hpp"
#include "report_errors.hpp"

namespace headscope::cli {
namespace {

const char* kAccuracyUsage =
    "usage: headscope accuracy --model DIR --text-file F [--weights q8|f16] [--threads N] [--json]\n"
    "  What 8-bit (default) or F16 weights change against float32 on the text: the loss, the KL divergence\n"
    "  of each position's next-token distribution, how often the most likely next token agrees, and the\n"
    "  largest difference of any attention weight.\n";

struct AccuracyArgs {
  std::string model, text_file;
  bool json = false;
  LoadOptions load;
};

AccuracyArgs parse(int argc, char** argv) {
  AccuracyArgs a;
  a.load.weights = WeightStorage::q8;
  parse_options(argc, argv, a.model, a.json, a.load, [&](const std::string& arg, const auto& value) {
    if (arg != "--text-file") return false;
    a.text_file = value();
    return true;
  });
  if (a.model.empty()) throw Error("--model DIR is required");
  if (a.text_file.empty()) throw Error("--text-file F is required");
  if (a.load.weights != WeightStorage::q8 && a.load.weights != WeightStorage::f16)
    throw Error("--weights is what to compare with float32: q8 or f16");
  return a;
}

std::vector<double> log_softmax(const float* z, int V) {
  double m = -INFINITY, s = 0.0;
  for (int v = 0; v < V; v++) m = std::max(m, (double)z[v]);
  for (int v = 0; v < V; v++) s += std::exp(z[v] - m);
  std::vector<double> out(V);
  for (int v = 0; v < V; v++) out[v] = z[v] - m - std::log(s);
  return out;
}

int run_accuracy(const AccuracyArgs& a) {
  std::ifstream f(a.text_file, std::ios::binary);
  if (!f) throw Error("cannot open the text file " + a.text_file);
  std::ostringstream ss;
  ss << f.rdbuf();
  LoadOptions base = a.load;
  base.weights = WeightStorage::f32;
  base.attention_maps = false;  // one head's map at a time, recomputed from the key cache
  LoadOptions other = base;
  other.weights = a.load.weights;
  Model m32 = Model::load_directory(a.model, base);
  Model mq = Model::load_directory(a.model, other);
  const std::vector<Token> tokens = m32.tokenizer().encode_input(ss.str());
  const int dropped = m32.tokens_to_drop((int)tokens.size());
  std::vector<int32_t> ids;
  for (std::size_t i = dropped; i < tokens.size(); i++) ids.push_back(tokens[i].id);
  if (ids.size() < 2) throw Error("the text file " + a.text_file + " has fewer than 2 tokens");
  RunOptions opt;
  opt.all_logits = true;
  m32.run_ids(ids, opt);
  mq.run_ids(ids, opt);
  const int T = (int)ids.size(), V = m32.config().vocab_size, P = T - 1;
  const std::vector<float> la = m32.logits_all(), lb = mq.logits_all();
  double loss32 = 0, loss = 0, kl_mean = 0, kl_max = 0;
  int agree = 0;
  for (int t = 0; t < P; t++) {
    const auto lp = log_softmax(&la[(std::size_t)t * V], V), lq = log_softmax(&lb[(std::size_t)t * V], V);
    double kl = 0;
    for (int v = 0; v < V; v++) kl += std::exp(lp[v]) * (lp[v] - lq[v]);
    kl_mean += kl / P;
    kl_max = std::max(kl_max, kl);
    loss32 -= lp[ids[t + 1]] / P;
    loss -= lq[ids[t + 1]] / P;
    agree += std::max_element(lp.begin(), lp.end()) - lp.begin() == std::max_element(lq.begin(), lq.end()) - lq.begin();
  }
  double attention = 0;
  for (int l = 0; l < m32.config().n_layer; l++)
    for (int h = 0; h < m32.config().n_head; h++) {
      const std::vector<float> x = m32.attention(l, h), y = mq.attention(l, h);
      for (std::size_t i = 0; i < x.size(); i++) attention = std::max(attention, std::fabs((double)x[i] - y[i]));
    }
  nlohmann::json j;
  j["weights"] = weight_storage_name(mq.weight_storage());
  j["tokens"] = T;
  j["dropped_tokens"] = dropped;
  j["loss_f32"] = loss32;
  j["loss"] = loss;
  j["kl_mean"] = kl_mean;
  j["kl_max"] = kl_max;
  j["top1_agreement"] = (double)agree / P;
  j["attention_max_diff"] = attention;
  j["weight_bytes_f32"] = m32.weight_bytes();
  j["weight_bytes"] = mq.weight_bytes();
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("%d tokens (%d cut), weights %s: %.1f MB against %.1f MB in float32\n", T, dropped,
              weight_storage_name(mq.weight_storage()), mq.weight_bytes() / 1e6, m32.weight_bytes() / 1e6);
  std::printf(
      "loss %.4f nats (float32 %.4f); KL mean %.5f max %.5f nats; same top token %.1f%%; attention max "
      "difference %.4f\n",
      loss, loss32, kl_mean, kl_max, 100.0 * agree / P, attention);
  return 0;
}

}  // namespace

int accuracy_command(int argc, char** argv) {
  return command_main(argc, argv, kAccuracyUsage, [&] { return run_accuracy(parse(argc, argv)); });
}

}  // namespace headscope::cli
