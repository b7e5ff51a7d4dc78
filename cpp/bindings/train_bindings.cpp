// embind bindings of headscope/training_run.hpp (only binds; the rules of embind.cpp's header comment
// apply): trainingPresets(), createTrainingRun(preset, specJson, init) -> TrainingRun, whose model()
// is a Model as load() gives one.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/training_run.hpp"
#include "js_guard.hpp"
#include "js_values.hpp"

using emscripten::val;
using headscope::Model;
using namespace headscope::js;
using headscope::train::TrainingRun;

namespace {

// A copy of the Uint8Array `u8` (`what` names it in the error)
std::vector<uint8_t> bytes_of(const val& u8, const char* what) {
  if (!u8.instanceof (val::global("Uint8Array"))) throw headscope::Error(std::string(what) + " must be a Uint8Array");
  std::vector<uint8_t> out(u8["length"].as<std::size_t>());
  val(emscripten::typed_memory_view(out.size(), out.data())).call<void>("set", u8);
  return out;
}

// spec_json: training_run.hpp's RunSpec JSON over the named preset's spec (or the defaults when
// preset is ""); init: null, or { config, weights: Uint8Array, vocab, merges } (GPT-2) or
// { config, weights, tokenizer } (the Llama family's tokenizer.json) to start from.
TrainingRun* create_training_run(std::string preset, std::string spec_json, val init) {
  return guarded(
      [&]() -> TrainingRun* {
        namespace tr = headscope::train;
        const tr::RunSpec base = preset.empty() ? tr::RunSpec{} : tr::preset(preset).spec;
        const tr::RunSpec spec = tr::spec_from_json(spec_json, base);
        if (init.isNull() || init.isUndefined()) return new TrainingRun(spec);
        const std::vector<uint8_t> weights = bytes_of(init["weights"], "init.weights");
        headscope::train::TokenizerFiles tokenizer;
        if (init["tokenizer"].isUndefined()) {
          tokenizer.vocab_json = string_of(init["vocab"], "init.vocab");
          tokenizer.merges_txt = string_of(init["merges"], "init.merges");
        } else {
          tokenizer.tokenizer_json = string_of(init["tokenizer"], "init.tokenizer");
        }
        return new TrainingRun(spec, string_of(init["config"], "init.config"), weights, std::move(tokenizer));
      },
      static_cast<TrainingRun*>(nullptr));
}

// n steps of the run's task; the losses, one per step
val training_steps(TrainingRun& run, int n) {
  return guarded([&] {
    if (n < 1) throw headscope::Error("steps must be at least 1, got " + std::to_string(n));
    std::vector<float> losses;
    losses.reserve(n);
    for (int i = 0; i < n; i++) losses.push_back(run.step());
    return f32_copy(losses);
  });
}

// one step on an explicit batch: ids (Int32Array of rows x (T+1)), row-major
val training_step_on(TrainingRun& run, val ids, int rows) {
  return guarded([&] {
    const std::vector<int32_t> flat = emscripten::convertJSArrayToNumberVector<int32_t>(ids);
    if (rows < 1 || flat.size() % rows) throw headscope::Error("the batch's ids do not split into equal rows");
    const std::size_t n = flat.size() / rows;
    std::vector<std::vector<int32_t>> batch(rows);
    for (int r = 0; r < rows; r++) batch[r].assign(flat.begin() + r * n, flat.begin() + (r + 1) * n);
    return val(run.step_on(batch));
  });
}

// { previous, induction } (L*NH each), attention (L, NH, T, T) and ids of the probe's first sequence
val training_probe(TrainingRun& run) {
  return guarded([&] {
    const headscope::train::HeadScores s = run.probe_scores();
    return object_of({{"previous", f32_copy(s.previous)},
                      {"induction", f32_copy(s.induction)},
                      {"attention", f32_copy(run.probe_attention())},
                      {"ids", i32_copy(run.probe_ids())},
                      {"period", val(headscope::train::probe_period(run.spec()))}});
  });
}

val training_export(const TrainingRun& run) {
  return guarded([&] {
    const std::vector<uint8_t> w = run.safetensors_bytes();
    val out = val::object();
    out.set("config", run.config_json());
    out.set("weights", u8_copy(w.data(), w.size()));
    if (run.tokenizer_files().is_tokenizer_json()) {
      out.set("tokenizer", run.tokenizer_files().tokenizer_json);
    } else {
      out.set("vocab", run.vocab_json());
      out.set("merges", run.merges_txt());
    }
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(headscope_train) {
  using namespace emscripten;
  function("trainingPresets", optional_override([]() { return headscope::train::presets_json(); }));
  function("createTrainingRun", &create_training_run, allow_raw_pointers());
  class_<TrainingRun>("TrainingRun")
      .function("steps", &training_steps)
      .function("stepOn", &training_step_on)
      .function("probe", &training_probe)
      .function("exportFiles", &training_export)
      .function("setText", optional_override([](TrainingRun& r, val text) {
                  return guarded([&] {
                    r.set_text(string_of(text, "text"));
                    return val(true);
                  });
                }))
      .function("model", optional_override([](const TrainingRun& r) {
                  return guarded([&]() -> Model* { return new Model(r.model()); }, static_cast<Model*>(nullptr));
                }),
                allow_raw_pointers())
      .function("stepsDone", optional_override([](const TrainingRun& r) { return r.steps_done(); }))
      .function("setThreads", optional_override([](TrainingRun& r, int threads) {
                  return guarded([&] {
                    r.trainer().set_threads(threads);
                    return val(r.trainer().threads());
                  });
                }))
      .function("learningRate", optional_override([](const TrainingRun& r, int step) { return r.learning_rate(step); }))
      .function("spec",
                optional_override([](const TrainingRun& r) { return headscope::train::spec_to_json(r.spec()); }))
      .function("config",
                optional_override([](const TrainingRun& r) { return guarded([&] { return val(r.config_json()); }); }))
      .function("bytes", optional_override([](const TrainingRun& r) { return (double)r.trainer().bytes(); }));
}
