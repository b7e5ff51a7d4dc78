// embind bindings of headscope/explain.hpp (only binds; the rules of embind.cpp's header comment):
// explainScore(model, layer, head, query, key, versus, token) of the model's last run, and
// circuits(model, seeds). versus -1: the mean over the keys the query sees; token -1: the most likely
// next token at the query.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>
#include <vector>

#include "headscope/explain.hpp"
#include "headscope/model.hpp"
#include "js_guard.hpp"
#include "js_values.hpp"

using emscripten::val;
using headscope::Model;
using namespace headscope::js;

namespace {

val explain_score(const Model& m, int layer, int head, int query, int key, int versus, int token) {
  return guarded([&] {
    headscope::ExplainOptions o;
    if (versus >= 0) o.versus = versus;
    if (token >= 0) o.token = token;
    const headscope::ScoreSplit r = headscope::explain_score(m, layer, head, query, key, o);
    val components = val::array();
    for (const std::string& c : r.components) components.call<void>("push", val(c));
    return object_of({{"layer", val(r.layer)},
                      {"head", val(r.head)},
                      {"query", val(r.query)},
                      {"key", val(r.key)},
                      {"components", components},
                      {"score", val(r.score)},
                      {"table", f64_copy(r.table)},
                      {"versus", val(r.versus)},
                      {"contrast", f64_copy(r.contrast)},
                      {"token", val(r.token)},
                      {"valueByToken", f64_copy(r.value_by_token)},
                      {"valueByPart", f64_copy(r.value_by_part)},
                      {"valueTotal", val(r.value_total)}});
  });
}

val circuits(const Model& m, int seeds) {
  return guarded([&] {
    if (seeds < 1) throw headscope::Error("seeds must be at least 1, got " + std::to_string(seeds));
    const headscope::Circuits r = headscope::circuits(m, seeds);
    return object_of({{"nLayer", val(r.n_layer)},
                      {"nHead", val(r.n_head)},
                      {"copying", f64_copy(r.copying)},
                      {"q", f64_copy(r.q)},
                      {"k", f64_copy(r.k)},
                      {"v", f64_copy(r.v)},
                      {"baselineQ", val(r.baseline_q)},
                      {"baselineK", val(r.baseline_k)},
                      {"baselineV", val(r.baseline_v)},
                      {"seeds", val(r.seeds)}});
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(headscope_explain) {
  emscripten::function("explainScore", &explain_score);
  emscripten::function("circuits", &circuits);
}
