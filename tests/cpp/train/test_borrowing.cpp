// A Trainer that reads a loaded Model's own weights (Trainer's borrowing constructor, train.hpp)
// against one that copied them (load(model)): the same loss, logits, head-output and gate gradients on
// every fixture model (GPT-2, Llama MHA/GQA/MQA, Qwen3, odd head sizes) in float32 and F16 weights, and
// logits equal to Model::run's in every storage (8-bit too); no parameter memory; and every use that needs parameters
// of its own refused with a message.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/train.hpp"
#include "test_util.hpp"

namespace tr = headscope::train;

namespace {

headscope::LoadOptions one_thread() {
  headscope::LoadOptions o;
  o.threads = 1;
  return o;
}

// One forward and one backward from a random dlogits (every logit's gradient non-zero, so the LM head's
// whole backward counts), with some heads gated, as the head measurement and the patching run them
struct Pass {
  float loss = 0;
  std::vector<float> logits, gate_grads;
  std::vector<std::vector<float>> head_grads;  // per layer
};
Pass run_pass(tr::Trainer& t, const std::vector<int>& ids, const std::vector<int>& targets,
              const std::vector<float>& gates, const std::vector<float>& dlogits) {
  const int T = (int)ids.size(), V = t.config().vocab_size;
  t.set_head_gates(gates);
  Pass p;
  p.loss = t.forward(ids.data(), targets.data(), 1, T);
  p.logits.assign(t.logits(), t.logits() + (std::size_t)T * V);
  t.backward_from_logits(dlogits, tr::Trainer::Gradients::gates);
  p.gate_grads.assign(t.head_gate_grads().begin(), t.head_gate_grads().end());
  for (int l = 0; l < t.config().n_layer; l++) {
    const auto g = t.head_outputs_grad(l);
    p.head_grads.emplace_back(g.begin(), g.end());
  }
  return p;
}

// |a - b| <= tol * (1 + |b|) elementwise
void require_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const std::string& what) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); i++) {
    INFO(what << " " << i << ": " << a[i] << " against " << b[i]);
    REQUIRE(std::fabs((double)a[i] - b[i]) <= tol * (1.0 + std::fabs((double)b[i])));
  }
}

}  // namespace

TEST_CASE("train: a trainer borrowing a model's weights equals one that copied them", "[train][borrowing]") {
  using headscope::WeightStorage;
  for (const std::string& name : test_util::all_fixture_models())
    for (const WeightStorage storage : {WeightStorage::f32, WeightStorage::f16, WeightStorage::q8}) {
      INFO("model " << name << ", weights " << headscope::weight_storage_name(storage));
      headscope::LoadOptions options = one_thread();
      options.weights = storage;
      headscope::Model model = test_util::load_fixture(name, "model.safetensors", options);
      const headscope::ModelConfig& c = model.config();
      const int T = std::min(9, c.n_positions), L = c.n_layer, NH = c.n_head, V = c.vocab_size;
      std::mt19937 rng(31);
      std::vector<int> ids(T), targets(T);
      for (int& id : ids) id = (int)(rng() % (uint32_t)V);
      for (int& id : targets) id = (int)(rng() % (uint32_t)V);
      tr::Trainer borrowing(model, 1, T);
      REQUIRE(borrowing.borrowing());
      REQUIRE(borrowing.params().empty());

      // Its forward is the model's own in every storage (8-bit: the inputs quantized per row as the
      // model's products quantize them): every position's logits equal Model::run's. The LM head is
      // another kernel there (rows of the vocabulary at a time, its own order of the C-term sums), so
      // within float32 rounding: a logit is a sum of C <= 64 products of O(1) terms, off by at most
      // about C units of roundoff (4e-6); 2e-5 relative is five times that. Running the 8-bit layers as
      // float32 products instead (the copied trainer below) misses by far more: checked.
      borrowing.forward(ids.data(), targets.data(), 1, T);
      const std::vector<float> trained(borrowing.logits(), borrowing.logits() + (std::size_t)T * V);
      headscope::RunOptions all;
      all.all_logits = true;
      model.run_ids(std::vector<int32_t>(ids.begin(), ids.end()), all);
      const std::vector<float> run = model.logits_all();
      require_close(trained, run, 2e-5, "logits against Model::run");
      if (storage == WeightStorage::q8) {
        tr::Trainer copied(c, 1, T, std::size_t(1) << 31, /*optimizer_state=*/false);
        copied.set_threads(1);
        copied.load(model);
        copied.forward(ids.data(), targets.data(), 1, T);
        double worst = 0;
        for (std::size_t i = 0; i < run.size(); i++)
          worst = std::max(worst, std::fabs((double)copied.logits()[i] - run[i]) / (1.0 + std::fabs((double)run[i])));
        INFO("the 8-bit layers as float32 products: " << worst);
        REQUIRE(worst > 10 * 2e-5);
      }

      // Against a trainer that copied the weights (float32 and F16; an 8-bit model's copy is its
      // dequantized weights in float32 products, another forward by definition). One forward and one
      // backward from a random dlogits (every logit's gradient non-zero, so the LM head's whole
      // backward counts), with a head off and one scaled: the gated backward's paths too.
      if (storage == WeightStorage::q8) continue;
      std::vector<float> gates((std::size_t)L * NH, 1.0f);
      gates[1] = 0.0f;
      gates[gates.size() - 1] = 0.5f;
      const std::vector<float> dlogits = test_util::random_normal((std::size_t)T * V, rng);
      tr::Trainer copied(c, 1, T, std::size_t(1) << 31, /*optimizer_state=*/false);
      copied.set_threads(1);
      copied.load(model);
      const Pass want = run_pass(copied, ids, targets, gates, dlogits);
      const Pass got = run_pass(borrowing, ids, targets, gates, dlogits);
      // the forward: the same packed values (a float32 model's panels repack to themselves; the F16
      // GEMM equals the float32 one on the widened weights), the same embedding and norms
      REQUIRE(got.loss == want.loss);
      test_util::require_same_bits(got.logits, want.logits, "logits");
      // the backward's linear layers: the same transposed weights into the same GEMM, bit for bit.
      // Float32: everything equal. F16: the LM head's backward sums the vocabulary 256 widened rows at a
      // time, the same terms as one product over all rows in another order (in the SIMD build each
      // output's chain runs through the rows in order either way; the scalar reference sums each block
      // apart). A gradient is a sum of V products, so reordering moves it by at most about V units of
      // float32's roundoff times its terms' size: 1e-4 relative is far above that for these
      // vocabularies, and a missing or wrong block of rows moves it by O(1)
      if (storage == WeightStorage::f32) {
        test_util::require_same_bits(got.gate_grads, want.gate_grads, "gate gradients");
        for (int l = 0; l < L; l++)
          test_util::require_same_bits(got.head_grads[l], want.head_grads[l], "head output gradients");
      } else {
        require_close(got.gate_grads, want.gate_grads, 1e-4, "gate gradients");
        for (int l = 0; l < L; l++) require_close(got.head_grads[l], want.head_grads[l], 1e-4, "head output gradients");
      }
      // no parameters of its own: the copy's bytes less at least the parameters' float32 size
      REQUIRE(borrowing.bytes() + copied.params().size() * sizeof(float) <= copied.bytes());
    }
}

TEST_CASE("train: a borrowing trainer refuses what needs parameters of its own", "[train][borrowing][errors]") {
  const headscope::Model model = test_util::load_fixture("tiny-hs4", "model.safetensors", one_thread());
  tr::Trainer t(model, 1, 4);
  const std::vector<int> ids = {1, 2, 3, 4};
  t.forward(ids.data(), ids.data(), 1, 4);
  const auto refused = Catch::Matchers::Contains("reads a model's weights and has no parameters of its own");
  REQUIRE_THROWS_WITH(t.backward(tr::Trainer::Gradients::all), refused);
  REQUIRE_THROWS_WITH(t.zero_grad(), refused);
  REQUIRE_THROWS_WITH(t.sgd_step(0.1f), refused);
  REQUIRE_THROWS_WITH(t.adamw_step({}), refused);
  REQUIRE_THROWS_WITH(t.load(model), refused);
  REQUIRE_THROWS_WITH(t.init_random(1), refused);
  REQUIRE_THROWS_WITH(t.safetensors_bytes(), refused);
  // the activations' and gates' gradients still work after the refusals
  REQUIRE_NOTHROW(t.backward(tr::Trainer::Gradients::gates));
  for (float g : t.head_gate_grads()) REQUIRE(std::isfinite(g));
}
