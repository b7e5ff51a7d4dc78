// embind bindings of Model::attention_tile and Model::attention_thumbnails (only binds; the rules of
// embind.cpp's header comment), of the model's last run: attentionTile(model, layer, head, rowBegin,
// rowEnd, colBegin, colEnd, bin) -> { rows, cols, values: Float32Array }; attentionThumbnails(model,
// size, rowBegin) -> { bin, n, values: Float32Array (L * NH * (n - rowBegin) * n) };
// attentionThumbnailBin(T, size) -> bin (headscope::attention_thumbnail_bin); headRoleScores(model) ->
// Float64Array (L * NH * 6, Model::head_role_scores).
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "headscope/model.hpp"
#include "js_guard.hpp"
#include "js_values.hpp"

using emscripten::val;
using headscope::Model;
using namespace headscope::js;

namespace {

val attention_tile(const Model& m, int layer, int head, int row_begin, int row_end, int col_begin, int col_end,
                   int bin) {
  return guarded([&] {
    const headscope::AttentionTile t = m.attention_tile(layer, head, row_begin, row_end, col_begin, col_end, bin);
    return object_of({{"rows", val(t.rows)}, {"cols", val(t.cols)}, {"values", f32_copy(t.values)}});
  });
}

val attention_thumbnails(const Model& m, int size, int row_begin) {
  return guarded([&] {
    int bin = 1;
    const std::vector<float> values = m.attention_thumbnails(size, &bin, row_begin);
    return object_of({{"bin", val(bin)}, {"n", val((m.T() + bin - 1) / bin)}, {"values", f32_copy(values)}});
  });
}

val attention_thumbnail_bin(int T, int size) {
  return guarded([&] { return val(headscope::attention_thumbnail_bin(T, size)); });
}

val head_role_scores(const Model& m) {
  return guarded([&] { return f64_copy(m.head_role_scores()); });
}

}  // namespace

EMSCRIPTEN_BINDINGS(headscope_maps) {
  emscripten::function("headRoleScores", &head_role_scores);
  emscripten::function("attentionTile", &attention_tile);
  emscripten::function("attentionThumbnails", &attention_thumbnails);
  emscripten::function("attentionThumbnailBin", &attention_thumbnail_bin);
}
