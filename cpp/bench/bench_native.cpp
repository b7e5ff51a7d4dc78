// Native benchmark (-O3 -march=native, preset native-release): the same kernels at the model's shapes
// and the same model calls as the wasm benchmark module, timed with steady_clock. Prints JSON.
// Usage: headscope_bench_native MODEL_DIR [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "bench_main.hpp"
#include "headscope/model.hpp"

using namespace headscope;

namespace {

struct Stats {
  double median_ms, p95_ms;
  int runs;
  double min_ms;
};

// warm-up, then repeated calls until min_runs and min_ms are both reached (capped at max_runs)
Stats time_it(const std::function<void()>& fn, const std::function<void()>& before = {}, int min_runs = 20,
              double min_ms = 150, int max_runs = 2000) {
  using clk = std::chrono::steady_clock;
  for (int i = 0; i < 3; i++) {
    if (before) before();
    fn();
  }
  std::vector<double> v;
  double total = 0;
  while (((int)v.size() < min_runs || total < min_ms) && (int)v.size() < max_runs) {
    if (before) before();
    const auto t0 = clk::now();
    fn();
    const double ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
    v.push_back(ms);
    total += ms;
  }
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, (std::size_t)(0.95 * v.size()))], (int)v.size(), v[0]};
}

std::string stats_json(const Stats& s) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "{\"median_ms\": %.6f, \"p95_ms\": %.6f, \"min_ms\": %.6f, \"runs\": %d}", s.median_ms,
                s.p95_ms, s.min_ms, s.runs);
  return buf;
}

}  // namespace

static int run(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [--quick]\n", argv[0]);
    return argc < 2 ? 1 : 0;
  }
  const bool quick = argc > 2 && std::strcmp(argv[2], "--quick") == 0;
  const double min_ms = quick ? 40 : 150;
  // one thread: this bench places the native build beside wasm's single-threaded engine (threads are
  // bench/shapes/vs_torch.py --family gpt2's and bench/long-text-bench.mjs's)
  headscope::LoadOptions one_thread;
  one_thread.threads = 1;
  Model model = Model::load_directory(argv[1], one_thread);
  const auto& c = model.config();
  const int C = c.n_embd, F = c.n_inner, NH = c.n_head, P = c.n_positions;
  std::vector<int32_t> ids(P);
  for (int i = 0; i < P; i++) ids[i] = (int32_t)((i * 7919 + 13) % c.vocab_size);

  std::printf("{\n  \"simd\": {\"arch\": \"%s\", \"float_lanes\": %d},\n", kernels::simd_info().arch.c_str(),
              kernels::simd_info().float_lanes);
  // GEMM at the model's shapes
  std::printf("  \"gemm\": [\n");
  const int shapes[4][2] = {{C, 3 * C}, {C, C}, {C, F}, {F, C}};
  const int Ms[] = {16, 64, P};  // the bench's key lengths: short, medium, the whole context
  bool first = true;
  for (auto& s : shapes) {
    bench::GemmCase g(s[0], s[1], P);
    for (int M : Ms) {
      const Stats st = time_it([&] { g.run(M); }, {}, 50, min_ms / 3);
      const double gflops = 2.0 * M * s[0] * s[1] / (st.median_ms * 1e6);
      std::printf("%s    {\"K\": %d, \"N\": %d, \"M\": %d, \"gflops\": %.3f, \"time\": %s}", first ? "" : ",\n", s[0],
                  s[1], M, gflops, stats_json(st).c_str());
      first = false;
    }
  }
  std::printf("\n  ],\n");
  // attention kernel alone, all heads of one layer
  std::printf("  \"attention\": [\n");
  bench::AttentionCase a(C, NH, P);
  first = true;
  for (int T : {16, 64, P}) {
    const Stats st = time_it([&] { a.run(T, 0); }, {}, 30, min_ms / 3);
    std::printf("%s    {\"T\": %d, \"time\": %s}", first ? "" : ",\n", T, stats_json(st).c_str());
    first = false;
  }
  std::printf("\n  ],\n");
  // full forward against T, and the attention kernel at the same T (for the attention share)
  std::printf("  \"forward\": [\n");
  first = true;
  std::vector<int> Ts;
  for (int T = 8; T <= P; T += (T < 16 ? 8 : 16)) Ts.push_back(T);
  for (int T : Ts) {
    const Stats st = time_it([&] { model.run_ids(std::span<const int32_t>(ids.data(), T)); },
                             [&] { model.clear_cache(); }, 10, min_ms);
    const Stats at = time_it([&] { a.run(T, 0); }, {}, 10, min_ms / 4);
    std::printf("%s    {\"T\": %d, \"time\": %s, \"attention_kernel_ms\": %.6f}", first ? "" : ",\n", T,
                stats_json(st).c_str(), at.median_ms * c.n_layer);
    first = false;
  }
  std::printf("\n  ],\n");
  // one-token incremental update: T-1 tokens cached, one typed
  std::printf("  \"incremental\": [\n");
  first = true;
  for (int T : {16, 64, P}) {
    const Stats st = time_it([&] { model.run_ids(std::span<const int32_t>(ids.data(), T)); },
                             [&] { model.run_ids(std::span<const int32_t>(ids.data(), T - 1)); }, 20, min_ms / 2);
    std::printf("%s    {\"T\": %d, \"time\": %s}", first ? "" : ",\n", T, stats_json(st).c_str());
    first = false;
  }
  std::printf("\n  ],\n");
  // the engine's kernels against their previous versions (cpp/bench/dev/kernel_versions.cpp), side by side
  std::printf("  \"previous\": [\n");
  first = true;
  auto versus = [&](const char* name, const std::function<void()>& engine, const std::function<void()>& alternative) {
    Stats e{}, c{};
    double e_best = 1e30, c_best = 1e30;
    std::vector<double> es, cs;
    for (int round = 0; round < 6; round++) {  // interleaved rounds
      e = time_it(engine, {}, 10, min_ms / 12);
      c = time_it(alternative, {}, 10, min_ms / 12);
      es.push_back(e.median_ms), cs.push_back(c.median_ms);
    }
    std::sort(es.begin(), es.end()), std::sort(cs.begin(), cs.end());
    e_best = es[0], c_best = cs[0];
    // engine_speedup: how much faster the engine's kernel runs than the alternative
    std::printf(
        "%s    {\"name\": \"%s\", \"engine_ms\": %.6f, \"alternative_ms\": %.6f, \"engine_speedup\": %.3f, "
        "\"engine_speedup_best\": %.3f}",
        first ? "" : ",\n", name, es[3], cs[3], cs[3] / es[3], c_best / e_best);
    first = false;
  };
  {
    bench::LmHeadCase lm(C, c.vocab_size);
    versus(
        "LM head", [&] { lm.run(); }, [&] { lm.run_8rows(); });
    for (auto& s : shapes) {
      bench::GemmCase g(s[0], s[1], P);
      char name[64];
      std::snprintf(name, sizeof name, "GEMM M=1 K=%d N=%d", s[0], s[1]);
      versus(
          name, [&] { g.run(1); }, [&] { g.run_split_k(1); });
    }
    for (int T : {64, P}) {
      bench::SoftmaxCase sm(NH, T);
      char name[64];
      std::snprintf(name, sizeof name, "softmax rows of one layer, T=%d", T);
      versus(
          name, [&] { sm.run(); }, [&] { sm.run_previous(); });
    }
    for (int T : {16, 64, P}) {
      char name[64];
      std::snprintf(name, sizeof name, "attention T=%d", T);
      versus(
          name, [&] { a.run(T, 0); }, [&] { a.run_previous(T, 0); });
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

int main(int argc, char** argv) { return headscope::bench::main_reporting_errors(argc, argv, run); }
