// embind bindings: this file only binds. Two rules:
//  - No C++ exception crosses into JavaScript. A JS exception unwinding through wasm frames skips
//    destructors and embind's argument cleanup, so every throw would leak; instead each bound
//    function catches, records the message, and returns null. The JS layer (web/lib/headscope.js)
//    turns a null into an Error carrying lastError(): the C++ message.
//  - Every array returned to JavaScript is a copy (a new Float32Array), never a view into wasm
//    memory, so memory growth cannot detach what callers hold.
#include <emscripten/bind.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/generate.hpp"
#include "headscope/heads.hpp"
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "headscope/predictions.hpp"
#include "headscope/training_run.hpp"
#include "js_bytes.hpp"
#include "js_guard.hpp"
#include "js_values.hpp"

using emscripten::val;
using headscope::Model;
using namespace headscope::js;
using headscope::train::TrainingRun;

namespace {

// Heads to switch off from JS's flat [layer0, head0, layer1, head1, ...] (the engine checks ranges).
std::vector<headscope::HeadRef> ablate_of(val ablate_pairs) {
  const std::vector<int> flat = emscripten::convertJSArrayToNumberVector<int>(ablate_pairs);
  if (flat.size() % 2) throw headscope::Error("ablate must hold [layer, head] pairs");
  std::vector<headscope::HeadRef> ablate;
  for (std::size_t i = 0; i < flat.size(); i += 2) ablate.push_back({flat[i], flat[i + 1]});
  return ablate;
}

// storage: "f32" or "f16" (headscope::WeightStorage); threads: LoadOptions::threads. The four-argument
// form loads float32 on the threads the engine has (one, but in the threaded build).
// What both loaders check of their weights and options: a Uint8Array, "f32" or "f16", the threads.
headscope::LoadOptions load_options(val weights, val storage, int threads) {
  if (!weights.instanceof (val::global("Uint8Array"))) throw headscope::Error("weights must be a Uint8Array");
  headscope::LoadOptions options;
  options.weights = headscope::parse_weight_storage(string_of(storage, "weights"));
  options.threads = threads;
  return options;
}

Model* load_stored(val config_json, val weights, val vocab_json, val merges_txt, val storage, int threads) {
  return guarded(
      [&]() -> Model* {
        const std::string config = string_of(config_json, "config.json");
        const std::string vocab = string_of(vocab_json, "vocab.json");
        const std::string merges = string_of(merges_txt, "merges.txt");
        const headscope::LoadOptions options = load_options(weights, storage, threads);
        return new Model(
            Model::load_source(config, std::make_shared<headscope::JsBytes>(weights), vocab, merges, 0, options));
      },
      static_cast<Model*>(nullptr));
}
Model* load(val config_json, val weights, val vocab_json, val merges_txt) {
  return load_stored(config_json, weights, vocab_json, merges_txt, val("f32"), 0);
}
// The same with Hugging Face's tokenizer.json instead of vocab.json and merges.txt (the Llama family's).
Model* load_tokenizer_json(val config_json, val weights, val tokenizer_json, val storage, int threads) {
  return guarded(
      [&]() -> Model* {
        const std::string config = string_of(config_json, "config.json");
        headscope::parse_config(config);  // a config of another family is named before the tokenizer is read
        const std::string tokenizer = string_of(tokenizer_json, "tokenizer.json");
        const headscope::LoadOptions options = load_options(weights, storage, threads);
        return new Model(Model::load_source(config, std::make_shared<headscope::JsBytes>(weights),
                                            headscope::Tokenizer::from_tokenizer_json(tokenizer), 0, options));
      },
      static_cast<Model*>(nullptr));
}

val token_array(const std::vector<headscope::Token>& tokens) {
  val out = val::array();
  for (const headscope::Token& t : tokens) {
    out.call<void>("push", object_of({{"id", val(t.id)},
                                      {"text", val(t.text)},
                                      {"byteStart", val(t.byte_start)},
                                      {"byteEnd", val(t.byte_end)}}));
  }
  return out;
}

// Runs `text`, filling the model's cache; returns { tokens, reusedTokens, droppedTokens }.
//   ablate: flat [layer0, head0, layer1, head1, ...]; all_logits: keep every position's logits
//   (for results()' loss); patch: null, or { from, layer, head } (RunOptions::patch, `from` tokenized
//   as a run tokenizes its text).
val run(Model& m, val text, val ablate_pairs, bool all_logits, val patch) {
  return guarded([&] {
    if (!text.isString()) throw headscope::Error("text must be a string, got " + text.typeOf().as<std::string>());
    headscope::RunOptions opt;
    opt.all_logits = all_logits;
    opt.ablate = ablate_of(ablate_pairs);
    if (!patch.isNull() && !patch.isUndefined()) {
      headscope::RunPatch p;
      for (const headscope::Token& t : m.tokenizer().encode_input(string_of(patch["from"], "patch.from")))
        p.from.push_back(t.id);
      p.head = {patch["layer"].as<int>(), patch["head"].as<int>()};
      opt.patch = std::move(p);
    }
    const headscope::RunInfo info = m.run(text.as<std::string>(), opt);
    return object_of({{"tokens", val(info.tokens)},
                      {"reusedTokens", val(info.reused_tokens)},
                      {"droppedTokens", val(info.dropped_tokens)}});
  });
}

// Everything the JavaScript result of the last run needs, built once: tokens as parallel arrays
// (ids, UTF-8 byte spans, display texts; the JS layer maps the spans to string indices),
// contributionNorms (L, NH, T), logitsLast (V), topNext (top_k candidates), loss (with all_logits),
// and attentionRows: rows [rows_from, T) of every head in blocks of block_rows x stride
// (Model::copy_attention_rows; rows_from 0, block_rows = stride = T is (L, NH, T, T)).
val results(const Model& m, int top_k, bool all_logits, int rows_from, int block_rows, int stride) {
  return guarded([&] {
    if (top_k < 0) throw headscope::Error("topK must be at least 0, got " + std::to_string(top_k));
    const std::vector<headscope::Token>& tokens = m.tokens();
    std::vector<int32_t> starts, ends;
    starts.reserve(tokens.size());
    ends.reserve(tokens.size());
    val texts = val::array();
    for (const headscope::Token& t : tokens) {
      starts.push_back((int32_t)t.byte_start);
      ends.push_back((int32_t)t.byte_end);
      texts.call<void>("push", val(t.text));
    }
    val out = val::object();
    out.set("tokenIds", i32_copy(m.ids()));
    out.set("tokenByteStarts", i32_copy(starts));
    out.set("tokenByteEnds", i32_copy(ends));
    out.set("tokenTexts", texts);
    std::vector<float> rows(m.attention_rows_floats(rows_from, block_rows, stride));
    m.copy_attention_rows(rows.data(), rows_from, block_rows, stride);
    out.set("attentionRows", f32_copy(rows));
    out.set("contributionNorms", f32_copy(m.contribution_norms()));
    const auto last = m.logits_last();
    out.set("logitsLast", f32_copy(last.data(), last.size()));
    val top = val::array();
    for (const headscope::TokenProbability& p : headscope::top_k_probabilities(last, top_k)) {
      top.call<void>(
          "push",
          object_of({{"id", val(p.id)}, {"token", val(m.tokenizer().token_display(p.id))}, {"prob", val(p.prob)}}));
    }
    out.set("topNext", top);
    if (all_logits) out.set("loss", headscope::mean_next_token_loss(m.logits_all(), m.ids(), m.config().vocab_size));
    return out;
  });
}

// Runs `text` with the heads of `ablate_pairs` switched off (flat [layer0, head0, ...], as run()),
// keeping head (layer, head)'s insides, and returns them as Model::head_inside() gives them:
// { layer, head, T, headSize, nEmbd, q, k, v, scores, attention, z, out, valueNorm }, Float32Arrays
// row-major, masked scores -Infinity. The run fills the cache as run() does; its other results are
// read with results() as usual.
val inspect(Model& m, val text, int layer, int head, val ablate_pairs) {
  return guarded([&] {
    headscope::RunOptions opt;
    opt.ablate = ablate_of(ablate_pairs);
    opt.inspect = headscope::HeadRef{layer, head};
    m.run(string_of(text, "text"), opt);
    const headscope::HeadInside in = m.head_inside();
    return object_of({{"layer", val(in.layer)},
                      {"head", val(in.head)},
                      {"T", val(in.T)},
                      {"headSize", val(in.head_size)},
                      {"nEmbd", val(in.n_embd)},
                      {"q", f32_copy(in.q)},
                      {"k", f32_copy(in.k)},
                      {"v", f32_copy(in.v)},
                      {"scores", f32_copy(in.scores)},
                      {"attention", f32_copy(in.attention)},
                      {"z", f32_copy(in.z)},
                      {"out", f32_copy(in.out)},
                      {"valueNorm", f32_copy(in.value_norm)}});
  });
}

// Head importance on `text` in steps (headscope::HeadsMeasurement): the JS layer calls step() in
// chunks and reads a cancel between them. The text is tokenized and cut to the context as run() cuts it.
//   exact_limit: at most this many heads, the exact greedy search; candidates: measured per step above it
headscope::HeadsMeasurement* measure_heads(Model& m, val text, int random_orders, double seed, int exact_limit,
                                           int candidates) {
  return guarded(
      [&]() -> headscope::HeadsMeasurement* {
        std::vector<headscope::Token> tokens = m.tokenizer().encode_input(string_of(text, "text"));
        const int dropped = m.tokens_to_drop((int)tokens.size());
        std::vector<int32_t> ids;
        for (std::size_t i = dropped; i < tokens.size(); i++) ids.push_back(tokens[i].id);
        headscope::HeadsOptions o;
        o.random_orders = random_orders;
        o.seed = seed_of(seed);
        o.exact_limit = exact_limit;
        o.exact_candidates = candidates;
        return new headscope::HeadsMeasurement(m, ids, o);
      },
      static_cast<headscope::HeadsMeasurement*>(nullptr));
}

val heads_report(const headscope::HeadsMeasurement& h) {
  return guarded([&] {
    const headscope::HeadsReport& r = h.report();
    std::vector<int32_t> order;
    for (const headscope::HeadRef& x : r.order) order.push_back(x.layer), order.push_back(x.head);
    return object_of({{"nLayer", val(r.n_layer)},
                      {"nHead", val(r.n_head)},
                      {"tokens", val(r.tokens)},
                      {"method", val(r.method)},
                      {"loss", val(r.loss)},
                      {"gateGrad", f64_copy(r.gate_grad)},
                      {"ablationDelta", f64_copy(r.ablation_delta)},
                      {"order", i32_copy(order)},
                      {"prunedLoss", f64_copy(r.pruned_loss)},
                      {"randomLossMean", f64_copy(r.random_mean)},
                      {"randomLossLow", f64_copy(r.random_lo)},
                      {"randomLossHigh", f64_copy(r.random_hi)}});
  });
}

// Activation and attribution patching between two texts in steps (headscope::ActivationPatching): the
// JS layer calls step() in chunks and reads a cancel between them; the first step runs both texts and
// the attribution map. answer, distractor: token ids, or -1 for the default (the most likely tokens).
headscope::ActivationPatching* patching(Model& m, val clean, val corrupted, int answer, int distractor,
                                        bool by_position) {
  return guarded(
      [&]() -> headscope::ActivationPatching* {
        const headscope::PatchIds ids =
            headscope::patching_ids(m, string_of(clean, "clean"), string_of(corrupted, "corrupted"));
        headscope::PatchOptions o;
        if (answer >= 0) o.answer = answer;
        if (distractor >= 0) o.distractor = distractor;
        o.by_position = by_position;
        return new headscope::ActivationPatching(m, ids.clean, ids.corrupted, o);
      },
      static_cast<headscope::ActivationPatching*>(nullptr));
}

// The report as it stands: scores not computed yet are NaN (Float64Arrays, row-major)
val patch_report(const headscope::ActivationPatching& p) {
  return guarded([&] {
    const headscope::PatchReport& r = p.report();
    return object_of({{"nLayer", val(r.n_layer)},
                      {"nHead", val(r.n_head)},
                      {"tokens", val(r.tokens)},
                      {"firstDifference", val(r.first_difference)},
                      {"idsClean", i32_copy(r.ids_clean)},
                      {"idsCorrupted", i32_copy(r.ids_corrupted)},
                      {"attributionReady", val(p.attribution_ready())},
                      {"answer", val(r.answer)},
                      {"distractor", val(r.distractor)},
                      {"ldClean", val(r.ld_clean)},
                      {"ldCorrupted", val(r.ld_corrupted)},
                      {"heads", f64_copy(r.heads)},
                      {"headsAttribution", f64_copy(r.heads_attribution)},
                      {"resid", f64_copy(r.resid)},
                      {"headsByPosition", f64_copy(r.heads_by_position)},
                      {"headsByPositionAttribution", f64_copy(r.heads_by_position_attribution)},
                      {"exactRunsDone", val(r.exact_runs_done)},
                      {"exactRunsTotal", val(r.exact_runs_total)}});
  });
}

// Direct logit attribution of the last run at `position` for `token` (Model::logit_attribution):
// { position, token, logit, total, heads (L*NH), attnBias (L), mlp (L), embedding, lnBias }, Float64Arrays.
val logit_attribution(const Model& m, int position, int token) {
  return guarded([&] {
    const headscope::LogitAttribution a = m.logit_attribution(position, token);
    return object_of({{"position", val(a.position)},
                      {"token", val(a.token)},
                      {"logit", val(a.logit)},
                      {"total", val(a.total())},
                      {"heads", f64_copy(a.heads)},
                      {"attnBias", f64_copy(a.attn_bias)},
                      {"mlp", f64_copy(a.mlp)},
                      {"embedding", val(a.embedding)},
                      {"lnBias", val(a.ln_bias)}});
  });
}

// Generation token by token (headscope::Generation): generation(model, text, temperature, topK, topP,
// seed, ablate) runs the text (ablate: flat [layer0, head0, ...], switched off in every run); next()
// draws a token, appends it, runs one incremental step and returns { id, token, prob, bytes
// (Uint8Array: the token's bytes, which may end inside a UTF-8 character), ids (Int32Array: the
// distribution drawn from, most likely first), probs (Float64Array) }; results() then gives the run
// of the sequence so far as after run(). restore() runs the sequence again after other runs.
headscope::Generation* generation(Model& m, val text, double temperature, int top_k, double top_p, double seed,
                                  val ablate_pairs) {
  return guarded(
      [&]() -> headscope::Generation* {
        headscope::SamplingOptions o;
        o.temperature = temperature;
        o.top_k = top_k;
        o.top_p = top_p;
        o.seed = seed_of(seed);
        return new headscope::Generation(m, string_of(text, "text"), o, ablate_of(ablate_pairs));
      },
      static_cast<headscope::Generation*>(nullptr));
}

val generation_next(headscope::Generation& g) {
  return guarded([&] {
    // the token's bytes are what next() appends to the text (the JS layer keeps the text as bytes:
    // a token may end inside a UTF-8 character, which a string cannot hold)
    const std::size_t before = g.result().text.size();
    const headscope::GeneratedToken t = g.next();
    const std::string& text = g.result().text;
    const val bytes = u8_copy(reinterpret_cast<const uint8_t*>(text.data() + before), text.size() - before);
    return object_of({{"id", val(t.id)},
                      {"token", val(t.token)},
                      {"prob", val(t.prob)},
                      {"bytes", bytes},
                      {"ids", i32_copy(t.distribution.ids)},
                      {"probs", f64_copy(t.distribution.probs)}});
  });
}

val config_object(const Model& m) {
  const auto& c = m.config();
  return object_of({{"modelType", val(c.model_type)},
                    {"vocabSize", val(c.vocab_size)},
                    {"nPositions", val(c.n_positions)},
                    {"nEmbd", val(c.n_embd)},
                    {"nLayer", val(c.n_layer)},
                    {"nHead", val(c.n_head)},
                    {"nKvHead", val(c.kv_heads())},
                    {"nInner", val(c.n_inner)},
                    {"headSize", val(c.head_size())},
                    {"layerNormEpsilon", val(c.layer_norm_epsilon)},
                    {"activation", val(c.activation_name)},
                    {"tiedEmbeddings", val(c.family == headscope::Family::gpt2 || c.tie_word_embeddings)},
                    {"kvCacheBytesPerToken", val((double)c.kv_cache_bytes_per_token())},
                    {"prefixTokens", val(m.tokenizer().prefix_size())}});
}

// Bytes currently allocated by malloc in the wasm heap: what a leak would grow.
// mallinfo's fields are int: above 2 GB (the module may grow to 4 GB) read them as unsigned
double heap_used_bytes() { return (double)(unsigned)mallinfo().uordblks; }

// ---- training ---------------------------------------------------------------------------------------

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

EMSCRIPTEN_BINDINGS(headscope) {
  using namespace emscripten;
  function("load", &load, allow_raw_pointers());  // overloaded by argument count
  function("load", &load_stored, allow_raw_pointers());
  function("loadTokenizerJson", &load_tokenizer_json, allow_raw_pointers());
  function("lastError", optional_override([]() { return last_error(); }));
  function("simdInfo", optional_override([]() { return simd_object(headscope::simd_info()); }));
  function("heapUsedBytes", &heap_used_bytes);
  class_<Model>("Model")
      .function("run", &run)
      .function("results", &results)
      .function("inspect", &inspect)
      // (L, NH, T): every head's value sizes for the last run (Model::value_norms)
      .function("valueNorms",
                optional_override([](const Model& m) { return guarded([&] { return f32_copy(m.value_norms()); }); }))
      .function("logitAttribution", &logit_attribution)
      .function("tokenIds", optional_override([](const Model& m) { return i32_copy(m.ids()); }))
      .function("reserve",
                optional_override([](Model& m, int tokens) { return guarded([&] { return val(m.reserve(tokens)); }); }))
      .function("config", &config_object)
      .function("threads", optional_override([](const Model& m) { return m.threads(); }))
      .function("parameterCount", optional_override([](const Model& m) { return (double)m.parameter_count(); }))
      .function("weightBytes", optional_override([](const Model& m) { return (double)m.weight_bytes(); }))
      .function("weightStorage", optional_override([](const Model& m) {
                  return std::string(headscope::weight_storage_name(m.weight_storage()));
                }))
      .function("tokenText", optional_override([](const Model& m, int id) {
                  return guarded([&] { return val(m.tokenizer().token_display(id)); });
                }))
      .function("singleTokenId", optional_override([](const Model& m, val token) {
                  return guarded([&] { return val(headscope::single_token_id(m, string_of(token, "token"))); });
                }))
      .function("tokenize", optional_override([](const Model& m, val text) {
                  return guarded([&] { return token_array(m.tokenizer().encode_input(string_of(text, "text"))); });
                }));
  function("measureHeads", &measure_heads, allow_raw_pointers());
  function("patching", &patching, allow_raw_pointers());
  class_<headscope::ActivationPatching>("ActivationPatching")
      .function("step", optional_override([](headscope::ActivationPatching& p, int max_runs) {
                  return guarded([&] { return val(p.step(max_runs)); });
                }))
      .function("progress", &headscope::ActivationPatching::progress)
      .function("report", &patch_report);
  function("generation", &generation, allow_raw_pointers());
  class_<headscope::Generation>("Generation")
      .function("next", &generation_next)
      .function("restore", optional_override([](headscope::Generation& g) {
                  return guarded([&] {
                    g.restore();
                    return val(true);
                  });
                }))
      .function("text", optional_override([](const headscope::Generation& g) { return g.result().text; }))
      .function("allIds", optional_override([](const headscope::Generation& g) { return i32_copy(g.result().ids); }));
  class_<headscope::HeadsMeasurement>("HeadsMeasurement")
      .function("step", optional_override([](headscope::HeadsMeasurement& h, int max_runs) {
                  return guarded([&] { return val(h.step(max_runs)); });
                }))
      .function("progress", &headscope::HeadsMeasurement::progress)
      .function("report", &heads_report);
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
