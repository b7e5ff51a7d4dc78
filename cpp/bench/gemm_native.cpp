// Native GEMM at GPT-2 small's shapes: the engine's blocked xsimd kernel (matmul_forward on weights
// packed at load time) against its previous version (cpp/bench/dev, matmul_forward_v1) and Eigen's
// GEMM (Eigen 3.4, vectorized with this build's -march=native),
// y (M, N) = x (M, K) @ W (K, N) + b; then the attention kernel of one layer at T = 64, 256, 1024.
// Prints one JSON line per case; medians of thread CPU time.
// Usage: headscope_gemm_native [--quick]
#include <Eigen/Dense>
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
          "%.2f, \"previous_gflops\": %.1f}\n",
          M, K, N, flop / ours / 1e6, flop / eigen / 1e6, eigen / ours, flop / previous / 1e6);
      std::fflush(stdout);
    }
  }
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
