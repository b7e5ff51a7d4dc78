// Every head's thumbnail (LoadOptions::thumbnail_size): kept with the run, raised by the attention
// kernel as it computes each row (kernels::AttentionPool), so the grid of every head needs no second
// pass over the maps and typing touches only the new rows' cells. Cells are max-pooled (model.hpp's
// AttentionTile says why) over bins that are powers of two (attention_thumbnail_bin): when a text
// grows past a bin, the cells at the doubled bin are the maxima of 2 x 2 old cells, exactly.
#include <algorithm>
#include <cstring>
#include <string>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "kernels/parallel.hpp"
#include "model/model_impl.hpp"
#include "model/model_memory.hpp"

namespace headscope {

int attention_thumbnail_bin(int T, int size) {
  if (size < 1) throw Error("attention thumbnails: size must be at least 1, got " + std::to_string(size));
  int bin = 1;
  while ((T + bin - 1) / bin > size) bin *= 2;
  return bin;
}

namespace {
int log2_of(int power_of_two) {
  int s = 0;
  while ((1 << s) < power_of_two) s++;
  return s;
}

}  // namespace

void Model::Impl::pool_from_cache(float* cells, int S, int shift, int l0, int l1, int r0, int r1) const {
  if (r0 >= r1 || l0 >= l1) return;
  const int NH = config_.n_head, cap = cap_;
  const int heads = (l1 - l0) * NH;
  constexpr int kRows = 32;
  kernels::parallel_for(heads, (double)heads * (r1 - r0) * r1 * config_.head_size(), [&](int a, int b) {
    static thread_local std::vector<float> rows;
    rows.resize((std::size_t)kRows * cap);
    for (int i = a; i < b; i++) {
      const int layer = l0 + i / NH, head = i % NH;
      float* head_cells = cells + ((std::size_t)layer * NH + head) * S * S;
      for (int t0 = r0; t0 < r1; t0 += kRows) {
        const int t1 = std::min(r1, t0 + kRows);
        map_rows(layer, head, t0, t1, rows.data());
        for (int t = t0; t < t1; t++)
          kernels::attention_pool_row(head_cells + (std::size_t)(t >> shift) * S, &rows[(std::size_t)(t - t0) * cap],
                                      t + 1, shift);
      }
    }
  });
}

void Model::Impl::prepare_thumbnails(int t_begin, int layer_begin) {
  if (thumb_size_ == 0) return;
  const int S = thumb_size_, L = config_.n_layer, NH = config_.n_head;
  const std::size_t per_head = (std::size_t)S * S, per_layer = per_head * NH;
  if (thumbs_.empty()) {
    thumbs_.assign(per_layer * L, 0.0f);
    thumb_rows_ = 0;
  }
  const int shift = log2_of(attention_thumbnail_bin(T_, S));
  // the rows the thumbnails hold that are still this run's: pooled before, and not computed again
  const int valid = thumb_rows_ < 0 ? 0 : std::min(thumb_rows_, t_begin);
  // this run's tail (model_impl.hpp): the rows of its last cell row, kept ones and computed ones;
  // decided from the last run's tail before anything below changes it, and valid only once the run ends
  const int last_row_begin = T_ > 0 ? ((T_ - 1) >> shift) << shift : 0;
  const auto old_tail_holds = [&](int begin, int end) {
    return tail_shift_ == shift && tail_shift_ == thumb_shift_ && tail_begin_ == begin && tail_end_ >= end;
  };
  const int kept_end = layer_begin > 0 ? T_ : t_begin;  // rows of the last cell row this run does not compute
  const bool tail_fits = (1 << shift) <= kThumbTailRows;
  tail_complete_ = tail_fits && thumb_rows_ >= 0 &&
                   (kept_end <= last_row_begin || old_tail_holds(last_row_begin, kept_end)) &&
                   (layer_begin == 0 || thumb_rows_ == T_);
  // the kept rows of the first recomputed row's cell row, which the last run's tail may hold (below)
  const int kept_from = (valid >> shift) << shift;
  const bool kept_in_tail = kept_from < valid && old_tail_holds(kept_from, valid);
  tail_begin_ = last_row_begin;
  tail_end_ = last_row_begin;  // nothing, until forward() ends
  tail_shift_ = tail_fits ? shift : -1;
  if (tail_fits) {
    const std::size_t floats = (std::size_t)L * NH * ((std::size_t)1 << shift) * S;
    if (thumb_tail_.size() < floats) thumb_tail_.resize(floats);
  }
  if (layer_begin > 0) {
    // the same tokens with other heads switched off: layers from layer_begin are computed again,
    // every row; the ones below keep theirs (pooled again from the cache if the last run's were lost)
    std::fill(thumbs_.begin() + (std::ptrdiff_t)(per_layer * layer_begin), thumbs_.end(), 0.0f);
    if (thumb_rows_ != T_ || thumb_shift_ != shift) {
      std::fill(thumbs_.begin(), thumbs_.begin() + (std::ptrdiff_t)(per_layer * layer_begin), 0.0f);
      thumb_shift_ = shift;
      pool_from_cache(thumbs_.data(), S, shift, 0, layer_begin, 0, T_);
    }
    return;
  }
  if (shift < thumb_shift_ || thumb_rows_ < 0) {
    // a shorter bin (the text shrank past a power of two), or thumbnails a failed run left: the kept
    // rows pooled again from the cache
    std::fill(thumbs_.begin(), thumbs_.end(), 0.0f);
    thumb_shift_ = shift;
    pool_from_cache(thumbs_.data(), S, shift, 0, L, 0, valid);
    return;
  }
  if (shift > thumb_shift_) {
    // a longer bin: each new cell the largest of the 2^d x 2^d old cells it covers
    const int d = shift - thumb_shift_;
    std::vector<float> old(per_head);
    for (std::size_t lh = 0; lh < (std::size_t)L * NH; lh++) {
      float* c = &thumbs_[lh * per_head];
      std::copy(c, c + per_head, old.begin());
      std::fill(c, c + per_head, 0.0f);
      for (int i = 0; i < S; i++)
        for (int j = 0; j <= i; j++) {
          float& to = c[(std::size_t)(i >> d) * S + (j >> d)];
          to = std::max(to, old[(std::size_t)i * S + j]);
        }
    }
    thumb_shift_ = shift;
  }
  if (thumb_rows_ > valid) {
    // rows the run computes again (the text changed at `valid`): their cell rows cleared, and the
    // kept rows that share the first of them put back: from the last run's tail when it holds them
    // (typing inside the last cell row), the forward's own numbers; else pooled again from the cache
    const int a = valid >> shift, r0 = a << shift;
    for (std::size_t lh = 0; lh < (std::size_t)L * NH; lh++)
      std::fill(thumbs_.begin() + (std::ptrdiff_t)(lh * per_head + (std::size_t)a * S),
                thumbs_.begin() + (std::ptrdiff_t)((lh + 1) * per_head), 0.0f);
    const int rows = 1 << shift;
    if (kept_in_tail) {
      for (std::size_t lh = 0; lh < (std::size_t)L * NH; lh++) {
        float* cells = &thumbs_[lh * per_head + (std::size_t)a * S];
        for (int t = r0; t < valid; t++) {
          const float* own = &thumb_tail_[(lh * rows + (std::size_t)(t - r0)) * S];
          for (int j = 0; j < S; j++) cells[j] = std::max(cells[j], own[j]);
        }
      }
    } else {
      pool_from_cache(thumbs_.data(), S, shift, 0, L, r0, valid);
    }
  }
}

std::vector<float> Model::Impl::attention_thumbnails(int size, int* bin_out, int row_begin) const {
  require_run();
  const int bin = attention_thumbnail_bin(T_, size), n = (T_ + bin - 1) / bin;
  if (row_begin < 0 || row_begin > n)
    throw Error("attention thumbnails: row_begin " + std::to_string(row_begin) + " is outside [0, " +
                std::to_string(n) + "], the thumbnails' cell rows");
  if (bin_out) *bin_out = bin;
  const std::size_t heads = (std::size_t)config_.n_layer * config_.n_head;
  if ((uint64_t)heads * n * n > kMaxResultFloats)
    throw Error("attention thumbnails of " + std::to_string(n) + " x " + std::to_string(n) + " cells for " +
                std::to_string(heads) + " heads need " + std::to_string((uint64_t)heads * n * n * 4 >> 20) +
                " MB, more than the " + std::to_string(kMaxResultFloats * 4 >> 20) +
                " MB limit: ask for a smaller size");
  const int rows = n - row_begin;
  std::vector<float> out(heads * rows * n, 0.0f);
  if (size == thumb_size_ && thumb_rows_ == T_) {  // the run's own
    const std::size_t S = thumb_size_;
    for (std::size_t lh = 0; lh < heads; lh++)
      for (int a = row_begin; a < n; a++)
        std::copy_n(&thumbs_[(lh * S + a) * S], n, &out[(lh * rows + a - row_begin) * n]);
    return out;
  }
  // another size: a pass over every map's rows (kept, or recomputed), pooled as the forward pools
  std::vector<float> all(heads * n * n, 0.0f);
  pool_from_cache(all.data(), n, log2_of(bin), 0, config_.n_layer, 0, T_);
  for (std::size_t lh = 0; lh < heads; lh++)  // (pointers, not &v[i]: no rows at all is an empty `out`)
    std::copy_n(all.data() + (lh * n + row_begin) * n, (std::size_t)rows * n, out.data() + lh * rows * n);
  return out;
}

}  // namespace headscope
