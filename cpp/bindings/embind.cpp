// embind bindings of loading, the Model (run, results, inspect, logit attribution, config) and
// generation; the *_bindings.cpp files beside it bind the rest. Every binding file only binds, and
// keeps two rules:
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
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "headscope/predictions.hpp"
#include "js_bytes.hpp"
#include "js_guard.hpp"
#include "js_values.hpp"

using emscripten::val;
using headscope::Model;
using namespace headscope::js;

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
// What both loaders check of their weights and options: a Uint8Array (or a Blob read in pieces, as
// weightSource in web/lib/files.js gives it: its length and subarray), "f32" or "f16", the threads.
// maps: LoadOptions::attention_maps; memory_limit: LoadOptions::memory_limit_bytes in bytes (0: all there is);
// activations: "all", "views" or "auto" (LoadOptions::activations).
headscope::LoadOptions load_options(val weights, val storage, int threads, bool maps, double memory_limit,
                                    val activations) {
  const bool pieces = !weights.isNull() && weights.typeOf().as<std::string>() == "object" &&
                      weights["length"].isNumber() && weights["subarray"].typeOf().as<std::string>() == "function";
  if (!weights.instanceof (val::global("Uint8Array")) && !pieces)
    throw headscope::Error("weights must be a Uint8Array or a Blob's pieces (length and subarray)");
  headscope::LoadOptions options;
  options.weights = headscope::parse_weight_storage(string_of(storage, "weights"));
  options.threads = threads;
  options.attention_maps = maps;
  options.memory_limit_bytes = (uint64_t)memory_limit;  // checked by the JS layer: a whole number >= 0
  options.activations = headscope::parse_activation_storage(string_of(activations, "activations"));
  return options;
}

Model* load_stored(val config_json, val weights, val vocab_json, val merges_txt, val storage, int threads, bool maps,
                   double memory_limit, val activations) {
  return guarded(
      [&]() -> Model* {
        const std::string config = string_of(config_json, "config.json");
        const std::string vocab = string_of(vocab_json, "vocab.json");
        const std::string merges = string_of(merges_txt, "merges.txt");
        const headscope::LoadOptions options = load_options(weights, storage, threads, maps, memory_limit, activations);
        return new Model(
            Model::load_source(config, std::make_shared<headscope::JsBytes>(weights), vocab, merges, 0, options));
      },
      static_cast<Model*>(nullptr));
}
Model* load(val config_json, val weights, val vocab_json, val merges_txt) {
  return load_stored(config_json, weights, vocab_json, merges_txt, val("f32"), 0, true, 0, val("all"));
}
// The same with Hugging Face's tokenizer.json instead of vocab.json and merges.txt (the Llama family's).
Model* load_tokenizer_json(val config_json, val weights, val tokenizer_json, val storage, int threads, bool maps,
                           double memory_limit, val activations) {
  return guarded(
      [&]() -> Model* {
        const std::string config = string_of(config_json, "config.json");
        headscope::parse_config(config);  // a config of another family is named before the tokenizer is read
        const std::string tokenizer = string_of(tokenizer_json, "tokenizer.json");
        const headscope::LoadOptions options = load_options(weights, storage, threads, maps, memory_limit, activations);
        return new Model(Model::load_source(config, std::make_shared<headscope::JsBytes>(weights),
                                            headscope::Tokenizer::from_tokenizer_json(tokenizer), 0, options));
      },
      static_cast<Model*>(nullptr));
}

// Tokens as parallel arrays: tokenIds, their UTF-8 byte spans (tokenByteStarts, tokenByteEnds) and
// display texts as one UTF-8 buffer (tokenTextBytes) with each text's end (tokenTextEnds), set on
// `out`; web/lib/result.js's tokenArrays() reads them. Copies of five arrays: a string or object per
// token cost calls into JavaScript each, a few ms at 1,000 tokens in the threaded build.
void set_token_arrays(val& out, const std::vector<headscope::Token>& tokens) {
  std::vector<int32_t> ids, starts, ends, text_ends;
  std::string texts;
  ids.reserve(tokens.size());
  starts.reserve(tokens.size());
  ends.reserve(tokens.size());
  text_ends.reserve(tokens.size());
  for (const headscope::Token& t : tokens) {
    ids.push_back((int32_t)t.id);
    starts.push_back((int32_t)t.byte_start);
    ends.push_back((int32_t)t.byte_end);
    texts += t.text;
    text_ends.push_back((int32_t)texts.size());
  }
  out.set("tokenIds", i32_copy(ids));
  out.set("tokenByteStarts", i32_copy(starts));
  out.set("tokenByteEnds", i32_copy(ends));
  out.set("tokenTextBytes", u8_copy(reinterpret_cast<const uint8_t*>(texts.data()), texts.size()));
  out.set("tokenTextEnds", i32_copy(text_ends));
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
// (set_token_arrays; the JS layer maps the spans to string indices),
// contributionNorms (L, NH, T - norms_from): the columns from token norms_from on, logitsLast (V),
// topNext (top_k candidates), loss (with all_logits),
// and attentionRows: rows [rows_from, T) of every head in blocks of block_rows x stride
// (Model::copy_attention_rows; rows_from 0, block_rows = stride = T is (L, NH, T, T)).
val results(const Model& m, int top_k, bool all_logits, int rows_from, int block_rows, int stride, int norms_from) {
  return guarded([&] {
    if (top_k < 0) throw headscope::Error("topK must be at least 0, got " + std::to_string(top_k));
    const std::vector<headscope::Token>& tokens = m.tokens();
    val out = val::object();
    set_token_arrays(out, tokens);
    // a head at a time into the JavaScript array: the rows never exist whole in wasm memory too
    // (604 MB more at GPT-2's 1,024 tokens, kept by the heap once grown)
    const std::size_t floats = m.attention_rows_floats(rows_from, block_rows, stride);
    const std::size_t per_head = (std::size_t)block_rows * stride;
    val rows = val::global("Float32Array").new_(floats);
    std::vector<float> head(per_head);
    for (int l = 0; per_head && l < m.config().n_layer; l++)
      for (int h = 0; h < m.config().n_head; h++) {
        m.copy_head_attention_rows(head.data(), l, h, rows_from, block_rows, stride);
        f32_into(rows, ((std::size_t)l * m.config().n_head + h) * per_head, head.data(), per_head);
      }
    out.set("attentionRows", rows);
    out.set("contributionNorms", f32_copy(m.contribution_norms(norms_from)));
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

// Model::memory(): { limitBytes, weightBytes, inUseAtLoadBytes, reserveBytes, contextTokens, activationBytes,
// capacityTokens, activationBudgetBytes, bytesAtContext, attentionMaps, activations, viewsOnly, fullActivationTokens }
val memory_object(const Model& m) {
  const headscope::MemoryUse u = m.memory();
  return object_of({{"limitBytes", val((double)u.limit_bytes)},
                    {"weightBytes", val((double)u.weight_bytes)},
                    {"inUseAtLoadBytes", val((double)u.in_use_at_load_bytes)},
                    {"reserveBytes", val((double)u.reserve_bytes)},
                    {"contextTokens", val(u.context_tokens)},
                    {"activationBytes", val((double)u.activation_bytes)},
                    {"capacityTokens", val(u.capacity_tokens)},
                    {"activationBudgetBytes", val((double)u.activation_budget_bytes)},
                    {"bytesAtContext", val((double)u.bytes_at_context)},
                    {"attentionMaps", val(u.attention_maps)},
                    {"activations", val(std::string(headscope::activation_storage_name(u.activations)))},
                    {"viewsOnly", val(u.views_only)},
                    {"fullActivationTokens", val(u.full_activation_tokens)}});
}

// Bytes currently allocated by malloc in the wasm heap: what a leak would grow.
// mallinfo's fields are int: above 2 GB (the module may grow to 4 GB) read them as unsigned
double heap_used_bytes() { return (double)(unsigned)mallinfo().uordblks; }

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
      .function("memory", &memory_object)
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
                  return guarded([&] {
                    val out = val::object();
                    set_token_arrays(out, m.tokenizer().encode_input(string_of(text, "text")));
                    return out;
                  });
                }));
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
}
