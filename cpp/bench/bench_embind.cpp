// Benchmark embind module: the engine's kernels at the model's shapes and the model itself, as
// exported functions that bench/*.mjs call repeatedly from JavaScript after a warm-up (V8 tiers a
// wasm function up from Liftoff to TurboFan only for later calls: cpp/README.md, "Toolchain notes"). Built from the
// same sources in the wasm-release (SIMD128) and wasm-scalar (HEADSCOPE_SIMD=OFF) trees.
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>

#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "bench_variants.hpp"
#include "headscope/model.hpp"
#include "js_bytes.hpp"
#include "js_values.hpp"

using emscripten::val;
using namespace headscope;
using namespace headscope::js;

namespace {

struct BenchModel {
  Model m;
  std::vector<int32_t> ids;
  std::vector<float> att_out;
  explicit BenchModel(Model&& mm) : m(std::move(mm)) {}
  void set_ids(val arr) { ids = emscripten::convertJSArrayToNumberVector<int32_t>(arr); }
  // Full forward of the first T ids from an empty cache (what a new text costs).
  void forward(int T) {
    m.clear_cache();
    m.run_ids(std::span<const int32_t>(ids.data(), T));
  }
  // The same, returning what onnxruntime returns to JavaScript: copies of the attention
  // probabilities (L, NH, T, T) and the last logits.
  val forward_out(int T) {
    forward(T);
    val o = val::object();
    const auto& c = m.config();
    att_out.resize((std::size_t)c.n_layer * c.n_head * T * T);
    m.copy_attention_all(att_out.data());
    o.set("attention", f32_copy(att_out.data(), att_out.size()));
    const auto l = m.logits_last();
    o.set("logitsLast", f32_copy(l.data(), l.size()));
    return o;
  }
  // Typing at the end: the first T-1 tokens are cached, token T is new.
  void prime(int T) { m.run_ids(std::span<const int32_t>(ids.data(), T - 1)); }
  int incremental(int T) { return m.run_ids(std::span<const int32_t>(ids.data(), T)).reused_tokens; }
};

BenchModel* load_model(std::string config, val weights, std::string vocab, std::string merges) {
  // tensor by tensor from the Uint8Array, as the package loads (a GPT-2-small file is 548 MB)
  return new BenchModel(Model::load_source(config, std::make_shared<JsBytes>(weights), vocab, merges, 0));
}

}  // namespace

EMSCRIPTEN_BINDINGS(headscope_bench) {
  using namespace emscripten;
  function("simdInfo", optional_override([]() { return simd_object(kernels::simd_info()); }));
  function("heapBytes", optional_override([]() { return (double)emscripten_get_heap_size(); }));
  class_<bench::GemmCase>("Gemm")
      .constructor<int, int, int>()
      .function("run", &bench::GemmCase::run)
      .function("runHeads", &bench::GemmCase::run_heads)
      .function("runSplitK", &bench::GemmCase::run_split_k)
      .function("runHeadsSplitK", &bench::GemmCase::run_heads_split_k)
      .function("output", optional_override(
                              [](bench::GemmCase& g, int M) { return f32_copy(g.out.data(), (std::size_t)M * g.N); }));
  class_<bench::AttentionCase>("Attention")
      .constructor<int, int, int>()
      .function("run", &bench::AttentionCase::run)
      .function("runReference", &bench::AttentionCase::run_reference)
      .function("runPrevious", &bench::AttentionCase::run_previous)
      .function("output", optional_override([](bench::AttentionCase& a, int T) {
                  return f32_copy(a.out.data(), (std::size_t)T * a.C);
                }))
      .function("probs",
                optional_override([](bench::AttentionCase& a) { return f32_copy(a.att.data(), a.att.size()); }));
  class_<bench::LmHeadCase>("LmHead")
      .constructor<int, int>()
      .constructor<int, int, float>()
      .function("run", &bench::LmHeadCase::run)
      .function("runF16", &bench::LmHeadCase::run_f16)
      .function("runF16V1", &bench::LmHeadCase::run_f16_v1)
      .function("run8Rows", &bench::LmHeadCase::run_8rows)
      .function("output", optional_override([](bench::LmHeadCase& l) { return f32_copy(l.out.data(), l.out.size()); }));
  class_<bench::SoftmaxCase>("Softmax")
      .constructor<int, int>()
      .function("run", &bench::SoftmaxCase::run)
      .function("runPrevious", &bench::SoftmaxCase::run_previous)
      .function("output",
                optional_override([](bench::SoftmaxCase& s) { return f32_copy(s.rows.data(), s.rows.size()); }));
  function("previousAvailable", &bench::dev::available);
  class_<BenchModel>("Model")
      .function("setIds", &BenchModel::set_ids)
      .function("forward", &BenchModel::forward)
      .function("forwardOut", &BenchModel::forward_out)
      .function("prime", &BenchModel::prime)
      .function("incremental", &BenchModel::incremental);
  function("loadModel", &load_model, allow_raw_pointers());
  bench::register_variants();
}
