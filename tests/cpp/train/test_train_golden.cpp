// The whole model against PyTorch (llm.c's test_gpt2.c): tests/fixtures/train/golden*.safetensors,
// written by scripts/fixtures/train_golden.py, hold a small model's weights, a fixed batch, the logits,
// the loss and the gradient of every parameter, computed in float64 from the float32 weights, and a
// 10-step AdamW loss trajectory: GPT-2 with either GELU, a Llama (grouped-query, head_dim not
// hidden / heads, untied) and a Qwen3 (multi-query, q/k norms, tied). Tolerances are derived beside
// each check.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <memory>
#include <string>
#include <vector>

#include "headscope/config.hpp"
#include "headscope/safetensors.hpp"
#include "headscope/train.hpp"
#include "test_util.hpp"

namespace tr = headscope::train;

namespace {

const std::string kTrainDir = std::string(HEADSCOPE_FIXTURES_DIR) + "/train";

struct Golden {
  std::vector<uint8_t> bytes;
  headscope::ModelConfig config;
  std::unique_ptr<headscope::SafeTensors> st;
  int B = 0, T = 0;
  std::vector<int> ids, targets;
  // variant "": the tanh-GELU GPT-2 (config.json, golden.safetensors); "erf": its twin with the exact
  // GELU (config-erf.json, golden-erf.safetensors): a checkpoint the model runs is one it trains;
  // "llama", "qwen3": the Llama family's (config-llama.json, golden-llama.safetensors, ...)
  explicit Golden(const std::string& variant = "") {
    const std::string suffix = variant.empty() ? "" : "-" + variant;
    bytes = test_util::read_bytes(kTrainDir + "/golden" + suffix + ".safetensors");
    config = headscope::parse_config(test_util::read_text(kTrainDir + "/config" + suffix + ".json"));
    st = std::make_unique<headscope::SafeTensors>(bytes, "golden.safetensors");
    const auto& shape = st->info("batch").shape;
    B = (int)shape[0];
    T = (int)shape[1] - 1;
    const auto batch = st->read_f32("batch", shape);
    for (int b = 0; b < B; b++)
      for (int t = 0; t < T; t++) {
        ids.push_back((int)batch[b * (T + 1) + t]);
        targets.push_back((int)batch[b * (T + 1) + t + 1]);
      }
  }
  std::vector<float> read(const std::string& name) const { return st->read_f32(name, st->info(name).shape); }
};

// A Trainer on the golden weights that has run forward and backward on the golden batch.
std::unique_ptr<tr::Trainer> trainer_with_gradients(const Golden& g) {
  auto trainer = std::make_unique<tr::Trainer>(g.config, g.B, g.T);
  trainer->load(*g.st);
  trainer->zero_grad();
  trainer->forward(g.ids.data(), g.targets.data(), g.B, g.T);
  trainer->backward();
  return trainer;
}

}  // namespace

TEST_CASE("train: logits, loss and every parameter's gradient match PyTorch", "[train][golden]") {
  const std::string variant = GENERATE(as<std::string>{}, "", "erf", "llama", "qwen3");
  INFO("golden" << (variant.empty() ? "" : "-") << variant << ".safetensors");
  const Golden g(variant);
  tr::Trainer trainer(g.config, g.B, g.T);
  trainer.load(*g.st);
  trainer.zero_grad();
  const float loss = trainer.forward(g.ids.data(), g.targets.data(), g.B, g.T);
  trainer.backward();

  // Logits: float32 sums of at most 4C = 80 products per layer through 2 layers, the norms and
  // attention, against float64, so the error scales with the logits' size; measured (native AVX-512)
  // at most 3.4e-7 of max|logits| (GPT-2 9e-8 at 0.31, Llama 4.2e-7 at 1.7, Qwen3 1.2e-6 at 3.6).
  // Tolerance 4e-6 of max|logits|: a 10x margin for other lane counts and summation orders (SIMD128,
  // SSE2), while a wrong term (a missing bias of 0.1, a misplaced mask, a wrong rotation) is off by
  // 1e-3 or more.
  const auto logits = g.read("logits");
  double max_logit_err = 0, max_logit = 0;
  for (std::size_t i = 0; i < logits.size(); i++) {
    max_logit_err = std::max(max_logit_err, (double)std::fabs(trainer.logits()[i] - logits[i]));
    max_logit = std::max(max_logit, (double)std::fabs(logits[i]));
  }
  INFO("max |logits - PyTorch| " << max_logit_err << ", max |logits| " << max_logit);
  REQUIRE(max_logit_err <= 4e-6 * max_logit);
  // Loss: mean of 21 cross-entropies ~3-4 (log-sum-exp over 23 logits), the sum taken in double: the
  // logits' bound (at most 1.5e-5) moves it by at most 3e-5 absolute, but the errors of one row's logits
  // mostly cancel in its log-sum-exp minus its target logit (measured: equal to 7-9 digits).
  const float want_loss = g.read("loss")[0];
  INFO(std::setprecision(9) << "loss " << loss << ", PyTorch " << want_loss);
  REQUIRE(std::fabs(loss - want_loss) <= 1e-6 * std::fabs(want_loss));

  // Gradients: each is the float32 rounding of a chain of sums (over B*T = 21 rows, widths <= 80)
  // compared to PyTorch's float64 result. Per tensor, the tolerance is relative to its largest element:
  // |g - ref| <= 1e-5 * max|ref| + 1e-9. Measured (native AVX-512): at most 5.1e-7 of max|ref| over all
  // 28 tensors of GPT-2 (the Llama family's 21 and 24 pass the same bound), so 1e-5 is a 20x margin for other builds,
  // while a wrong gradient (a missing term, a transposed index, a wrong scale) is off by O(1) of max|ref|.
  for (const tr::NamedTensor& t : trainer.tensors()) {
    const auto want = g.read("grad." + t.name);
    REQUIRE(want.size() == t.size());
    double max_ref = 0, max_err = 0;
    for (std::size_t i = 0; i < want.size(); i++) max_ref = std::max(max_ref, (double)std::fabs(want[i]));
    const float* got = trainer.grads().data() + t.offset;
    for (std::size_t i = 0; i < want.size(); i++) max_err = std::max(max_err, (double)std::fabs(got[i] - want[i]));
    INFO(std::setprecision(3) << t.name << ": max |grad - PyTorch| " << max_err << ", max |grad| " << max_ref
                              << ", relative " << max_err / (max_ref + 1e-30));
    CHECK(max_err <= 1e-5 * max_ref + 1e-9);
    REQUIRE(max_ref > 0);  // every parameter gets a gradient in this batch
  }
}

TEST_CASE("train: 10 AdamW steps follow PyTorch's loss trajectory step by step", "[train][golden][adamw]") {
  const std::string variant = GENERATE(as<std::string>{}, "", "erf", "llama", "qwen3");
  INFO("golden" << (variant.empty() ? "" : "-") << variant << ".safetensors");
  const Golden g(variant);
  const auto want = g.read("adamw_losses");
  const auto hp = g.read("adamw_hparams");
  tr::AdamW opt;
  opt.lr = hp[0];
  opt.beta1 = hp[1];
  opt.beta2 = hp[2];
  opt.eps = hp[3];
  opt.weight_decay = hp[4];
  opt.clip = hp[5];
  tr::Trainer trainer(g.config, g.B, g.T);
  trainer.load(*g.st);
  // The same batch each step, lr 1e-2, weight decay 0.1, clipping at norm 1. float32 weights and moments
  // drift from PyTorch's float64 ones by ~1e-7 relative per step; measured (native AVX-512) loss error
  // at most 4.9e-7 relative over the 10 steps. Tolerance 1e-5 relative per step: a 20x margin, while a
  // wrong bias correction, decay or clipping changes the loss by 1e-3 or more within two steps.
  for (std::size_t s = 0; s < want.size(); s++) {
    trainer.zero_grad();
    const float loss = trainer.forward(g.ids.data(), g.targets.data(), g.B, g.T);
    trainer.backward();
    trainer.adamw_step(opt);
    INFO(std::setprecision(9) << "step " << s << ": loss " << loss << ", PyTorch " << want[s] << ", relative error "
                              << std::fabs(loss - want[s]) / want[s]);
    REQUIRE(std::fabs(loss - want[s]) <= 1e-5 * std::fabs(want[s]));
  }
}

TEST_CASE("train: SGD with lr 1 moves every weight by exactly minus its gradient", "[train][sgd]") {
  const Golden g;
  auto trainer_ptr = trainer_with_gradients(g);
  tr::Trainer& trainer = *trainer_ptr;
  const std::vector<float> before(trainer.params().begin(), trainer.params().end());
  trainer.sgd_step(1.0f);
  for (std::size_t i = 0; i < before.size(); i++) REQUIRE(trainer.params()[i] == before[i] - trainer.grads()[i]);
}

TEST_CASE("train: bad input gets a clear error", "[train][errors]") {
  const Golden g;
  tr::Trainer trainer(g.config, g.B, g.T);
  std::vector<int> ids = g.ids;
  ids[3] = g.config.vocab_size;
  REQUIRE_THROWS_WITH(trainer.forward(ids.data(), g.targets.data(), g.B, g.T),
                      Catch::Contains("outside the vocabulary"));
  REQUIRE_THROWS_WITH(trainer.forward(g.ids.data(), g.targets.data(), g.B + 1, g.T), Catch::Contains("outside"));
  headscope::ModelConfig big = g.config;
  big.n_embd = 4096;
  big.n_head = 16;
  big.n_layer = 48;
  big.vocab_size = 50257;
  big.n_positions = 1024;
  REQUIRE_THROWS_WITH(tr::Trainer(big, 8, 1024), Catch::Contains("MiB"));
}

TEST_CASE("train: the written safetensors reads back to the same weights", "[train][export]") {
  const Golden g;
  tr::Trainer trainer(g.config, g.B, g.T);
  trainer.init_random(5);
  const auto bytes = trainer.safetensors_bytes();
  const headscope::SafeTensors st(bytes, "written");
  tr::Trainer again(headscope::parse_config(trainer.config_json()), g.B, g.T);
  again.load(st);
  for (std::size_t i = 0; i < trainer.params().size(); i++) REQUIRE(again.params()[i] == trainer.params()[i]);
}

TEST_CASE("train: AdamW clipping scales the gradients to the global norm, as clip_grad_norm_", "[train][adamw]") {
  const Golden g;
  auto trainer_ptr = trainer_with_gradients(g);
  tr::Trainer& trainer = *trainer_ptr;
  const double norm = trainer.grad_norm();
  REQUIRE(norm > 0.5);  // PyTorch: 1.0054 on this batch
  // clip above the norm: gradients untouched (bit for bit)
  const std::vector<float> before(trainer.grads().begin(), trainer.grads().end());
  tr::AdamW opt;
  opt.clip = (float)(2 * norm);
  tr::Trainer same(g.config, g.B, g.T);
  same.load(*g.st);
  same.zero_grad();
  same.forward(g.ids.data(), g.targets.data(), g.B, g.T);
  same.backward();
  same.adamw_step(opt);
  for (std::size_t i = 0; i < before.size(); i++) REQUIRE(same.grads()[i] == before[i]);
  // clip below the norm: scaled by clip / (norm + 1e-6), so the new norm is clip * norm / (norm + 1e-6);
  // each of the ~7k gradients takes one float rounding (u relative), so the norm is within ~2u relative.
  opt.clip = 0.1f;
  trainer.adamw_step(opt);
  const double want = 0.1f * norm / (norm + 1e-6);
  INFO("norm before " << norm << ", after " << trainer.grad_norm() << ", want " << want);
  REQUIRE(std::fabs(trainer.grad_norm() - want) <= 1e-6 * want);
}
