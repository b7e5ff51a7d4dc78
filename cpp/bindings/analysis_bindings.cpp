// embind bindings of headscope/heads.hpp and headscope/patching.hpp (only binds; the rules of
// embind.cpp's header comment apply): measureHeads(model, text, randomOrders, seed, exactLimit,
// candidates) -> HeadsMeasurement and patching(model, clean, corrupted, answer, distractor,
// byPosition) -> ActivationPatching, both measured in steps: step(maxRuns), progress(), report().
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/heads.hpp"
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "js_guard.hpp"
#include "js_values.hpp"

using emscripten::val;
using headscope::Model;
using namespace headscope::js;

namespace {

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

}  // namespace

EMSCRIPTEN_BINDINGS(headscope_analysis) {
  using namespace emscripten;
  function("measureHeads", &measure_heads, allow_raw_pointers());
  class_<headscope::HeadsMeasurement>("HeadsMeasurement")
      .function("step", optional_override([](headscope::HeadsMeasurement& h, int max_runs) {
                  return guarded([&] { return val(h.step(max_runs)); });
                }))
      .function("progress", &headscope::HeadsMeasurement::progress)
      .function("report", &heads_report);
  function("patching", &patching, allow_raw_pointers());
  class_<headscope::ActivationPatching>("ActivationPatching")
      .function("step", optional_override([](headscope::ActivationPatching& p, int max_runs) {
                  return guarded([&] { return val(p.step(max_runs)); });
                }))
      .function("progress", &headscope::ActivationPatching::progress)
      .function("report", &patch_report);
}
