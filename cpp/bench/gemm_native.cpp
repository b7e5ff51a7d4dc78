// Native GEMM at GPT-2 small's shapes: the engine's blocked xsimd kernel (matmul_forward on weights
// packed at load time) against its previous version (cpp/bench/dev, matmul_forward_v1) and Eigen's
// GEMM (Eigen 3.4, vectorized with this build's -march=native),
// y (M, N) = x (M, K) @ W (K, N) + b, each also over this core's multiply-add ceiling (the first line);
// then where the GEMM's time goes between that ceiling and the whole product (gemm_ladder below); then
// the attention kernel of one layer at T = 64, 256, 1024.
// Prints one JSON line per case; medians of thread CPU time.
// Usage: headscope_gemm_native [--quick]
#include <Eigen/Dense>
#include <xsimd/xsimd.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "dev/kernel_versions.hpp"
#include "kernels/gemm_tile.hpp"
#include "kernels/kernels.hpp"

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// This thread's CPU time: the cores are shared with other jobs, and time spent descheduled would
// otherwise land on whichever kernel happened to be running.
double thread_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double median_ms(const std::function<void()>& fn, int runs) {
  fn();  // warm-up
  std::vector<double> v;
  for (int i = 0; i < runs; i++) {
    const double t0 = thread_cpu_ms();
    fn();
    v.push_back(thread_cpu_ms() - t0);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// This core's multiply-add ceiling in GFLOP/s: 12 independent fused multiply-add chains of the build's
// widest batch, no memory traffic (two FMA units of 4 cycles' latency need 8 chains in flight). The
// GEMM's lines are read against it: the machine behind the bench's VM changes, and so does the ceiling.
volatile float g_ceiling_sink;  // a global: the timer's call cannot be moved before the chains' use

// Keeps vector registers as they are: the compiler may not fold the chains away or hoist them past the
// clock (an asm it cannot see into that reads and writes them; "v" is x86's vector class, "w" Arm's)
#define KEEP_IN_REGISTERS(...) asm volatile("" : __VA_ARGS__)
#if defined(__x86_64__) || defined(__i386__)
#define REG(b) "+v"(b.data)
#else
#define REG(b) "+w"(b.data)
#endif

double fma_ceiling_gflops(int iters) {
  using B = xsimd::batch<float>;
  constexpr int kChains = 12;
  // twelve named registers, not an array: an array's elements live in memory once an asm names them
  B a0(1.0f), a1(2.0f), a2(3.0f), a3(4.0f), a4(5.0f), a5(6.0f), a6(7.0f), a7(8.0f), a8(9.0f), a9(10.0f), a10(11.0f),
      a11(12.0f);  // unequal: no two chains can be merged
  B x(0.9999999f), y(1e-7f);
  // both operands in registers: rebuilt inside the loop, the broadcast and the load of a constant
  // take the ports of AVX-512's multiply-add (145 against 214 GFLOP/s on the Intel VM of 2026-12-06)
  KEEP_IN_REGISTERS(REG(x), REG(y));
  const double t0 = thread_cpu_ms();
  for (int i = 0; i < iters; i++) {
    a0 = xsimd::fma(a0, x, y), a1 = xsimd::fma(a1, x, y), a2 = xsimd::fma(a2, x, y), a3 = xsimd::fma(a3, x, y);
    a4 = xsimd::fma(a4, x, y), a5 = xsimd::fma(a5, x, y), a6 = xsimd::fma(a6, x, y), a7 = xsimd::fma(a7, x, y);
    a8 = xsimd::fma(a8, x, y), a9 = xsimd::fma(a9, x, y), a10 = xsimd::fma(a10, x, y), a11 = xsimd::fma(a11, x, y);
    KEEP_IN_REGISTERS(REG(a0), REG(a1), REG(a2), REG(a3), REG(a4), REG(a5));  // every step happens
    KEEP_IN_REGISTERS(REG(a6), REG(a7), REG(a8), REG(a9), REG(a10), REG(a11));
  }
  g_ceiling_sink = xsimd::hadd(((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11)));
  const double ms = thread_cpu_ms() - t0;
  return 2.0 * kChains * B::size * (double)iters / ms / 1e6;
}

// Where the GEMM's time goes, one step at a time from the ceiling to the whole product, at GPT-2 small's
// attention output shape (M 256, K 768, N 768), each step the same register tile (gemm::packed_tile
// at the build's height) on the same packed weights and input rows (row stride K, as in the model):
//   tile_l1:   one row tile against one panel's depth slice of 128 steps, 400 times: both operands in
//              L1 (16 KB of weights with AVX-512), so only the tile's own loop (its loads and
//              broadcasts beside the multiply-adds) stands between it and the ceiling;
//   tile_l2:   the GEMM's loop nest (depth slices > panel groups > row tiles > panels, gemm.cpp) with
//              nothing else: every row tile streams its group's weight slices from L2;
//   matmul:    matmul_forward itself (the bias, the partial last tile, the call).
// This VM has no hardware counters (perf stat: cycles not supported), so this is the profile.
void gemm_ladder(double ceiling, bool quick) {
  namespace k = headscope::kernels;
  constexpr int M = 256, K = 768, N = 768;
  const k::GemmBlocking blk = k::gemm_blocking();
  const int R = k::gemm::kTileRows, P = headscope::simd::kPanel, panels = N / P, full_rows = M / R * R;
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x((std::size_t)M * K), w((std::size_t)K * N), b(N), y((std::size_t)M * N);
  for (auto& v : x) v = d(rng);
  for (auto& v : w) v = 0.02f * d(rng);
  for (auto& v : b) v = d(rng);
  const k::PackedLinear W = k::pack_linear(w.data(), b.data(), K, N);
  const int runs = quick ? 3 : 9;
  const auto line = [&](const char* step, double flop, double ms) {
    std::printf("{\"ladder\": \"%s\", \"gflops\": %.1f, \"of_ceiling\": %.2f}\n", step, flop / ms / 1e6,
                flop / ms / 1e6 / ceiling);
  };
  // the build's tile (its height kTileRows, as gemm.cpp's full row tiles)
  const auto tile = [&](float* out, const float* a, const float* panel, int depth, k::gemm::TileStart start,
                        const float* bias) {
    k::gemm::packed_tile<k::gemm::kTileRows>(out, N, a, K, panel, depth, start, bias, P);
  };
  {
    constexpr int depth = 128, reps = 400;
    line("tile_l1", 2.0 * R * depth * P * reps,
         median_ms(
             [&] {
               for (int i = 0; i < reps; i++)
                 tile(y.data(), x.data(), W.panels.data(), depth,
                      i ? k::gemm::TileStart::out : k::gemm::TileStart::zero,
                      nullptr);  // each pass adds to the last: no pass can be left out
             },
             runs));
  }
  line("tile_l2", 2.0 * full_rows * K * N,
       median_ms(
           [&] {
             for (int k0 = 0; k0 < K; k0 += blk.depth_block) {
               const int depth = std::min(blk.depth_block, K - k0);
               for (int g0 = 0; g0 < panels; g0 += blk.panel_group)
                 for (int t = 0; t < full_rows; t += R)
                   for (int p = g0; p < std::min(panels, g0 + blk.panel_group); p++)
                     tile(y.data() + (std::size_t)t * N + p * P, x.data() + (std::size_t)t * K + k0,
                          W.panels.data() + ((std::size_t)p * K + k0) * P, depth,
                          k0 ? k::gemm::TileStart::out : k::gemm::TileStart::bias, W.bias.data() + p * P);
             }
           },
           runs));
  line("matmul", 2.0 * M * K * N, median_ms([&] { k::matmul_forward(y.data(), x.data(), W, M); }, runs));
}

int run(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 1;
    }
  }
  std::vector<double> ceilings;
  for (int r = 0; r < 5; r++) ceilings.push_back(fma_ceiling_gflops(quick ? 4'000'000 : 20'000'000));
  std::sort(ceilings.begin(), ceilings.end());
  const double ceiling = ceilings[2];
  std::printf("{\"fma_ceiling_gflops\": %.1f, \"lanes\": %d}\n", ceiling, (int)xsimd::batch<float>::size);
  const int C = 768, F = 3072;
  const int shapes[4][2] = {{C, 3 * C}, {C, C}, {C, F}, {F, C}};
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int M : {1, 64, 256, 1024}) {
    for (auto& s : shapes) {
      const int K = s[0], N = s[1];
      std::vector<float> x((std::size_t)M * K), w((std::size_t)K * N), b(N), y((std::size_t)M * N);
      for (auto& v : x) v = d(rng);
      for (auto& v : w) v = 0.02f * d(rng);
      for (auto& v : b) v = d(rng);
      const headscope::kernels::PackedLinear packed = headscope::kernels::pack_linear(w.data(), b.data(), K, N);
      const Eigen::Map<const RowMat> X(x.data(), M, K), W(w.data(), K, N);
      const Eigen::Map<const Eigen::RowVectorXf> B(b.data(), N);
      Eigen::Map<RowMat> Y(y.data(), M, N);
      const int runs = quick ? 3 : (M >= 256 ? 7 : 21);
      const double ours = median_ms([&] { headscope::kernels::matmul_forward(y.data(), x.data(), packed, M); }, runs);
      const double eigen = median_ms(
          [&] {
            Y.noalias() = X * W;
            Y.rowwise() += B;
          },
          runs);
      const double previous =
          median_ms([&] { headscope::bench::dev::matmul_forward_v1(y.data(), x.data(), packed, M); }, runs);
      const double flop = 2.0 * M * K * N;
      std::printf(
          "{\"M\": %d, \"K\": %d, \"N\": %d, \"ours_gflops\": %.1f, \"eigen_gflops\": %.1f, \"ours_over_eigen\": "
          "%.2f, \"previous_gflops\": %.1f, \"ours_of_ceiling\": %.2f}\n",
          M, K, N, flop / ours / 1e6, flop / eigen / 1e6, eigen / ours, flop / previous / 1e6,
          flop / ours / 1e6 / ceiling);
      std::fflush(stdout);
    }
  }
  gemm_ladder(ceiling, quick);
  // attention of one layer (NH 12, head size 64), all rows from an empty cache, att stride 1024 as in
  // the model at full context: the kernel alone, in GFLOP/s of its causal products (QK^T and PV)
  {
    const int NH = 12, HS = 64, cap = 1024;
    std::vector<float> qkv((std::size_t)cap * 3 * C), att((std::size_t)NH * cap * cap), out((std::size_t)cap * C),
        cache(headscope::kernels::attention_key_panels_floats(cap, C, NH));
    for (auto& v : qkv) v = d(rng);
    for (int T : {64, 256, 1024}) {
      const double ms = median_ms(
          [&] {
            headscope::kernels::attention_forward(out.data(), att.data(), qkv.data(), 0, T, C, NH, cap, cache.data());
          },
          quick ? 3 : 9);
      const double flop = NH * 2.0 * 2 * HS * (double)T * (T + 1) / 2;
      std::printf("{\"attention_T\": %d, \"ms\": %.3f, \"gflops\": %.1f}\n", T, ms, flop / ms / 1e6);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return headscope::bench::main_reporting_errors(argc, argv, run); }
