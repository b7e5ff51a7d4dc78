// headscope bench --model DIR --tokens T [--repeat N]: the fields of its JSON line are described in
// main.cpp.
#include "bench_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"

namespace headscope::cli {
namespace {

// A memory figure of this process from /proc/self/status ("VmHWM" peak resident, "VmRSS" resident
// now), in MB; -1 where /proc is unavailable.
double status_mb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;  // "VmHWM:  123 kB"
  return -1;
}

// CPU time of this process: on cores shared with other jobs, wall time also counts the time the
// process waited for a core; both are reported.
double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int bench_command(const Args& a) {
  using clk = std::chrono::steady_clock;
  const auto ms_since = [](clk::time_point t0) {
    return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
  };
  const auto t_load = clk::now();
  headscope::Model model = headscope::Model::load_directory(a.model, a.load);
  const double load_ms = ms_since(t_load);
  const double rss_after_load_mb = status_mb("VmRSS");
  const auto& c = model.config();
  const int T = a.tokens;
  if (T > c.n_positions)
    throw headscope::Error("--tokens " + std::to_string(T) + " exceeds the model's context of " +
                           std::to_string(c.n_positions));
  // Token ids spread over the vocabulary; speed does not depend on which ids they are.
  std::vector<int32_t> ids(T);
  for (int i = 0; i < T; i++) ids[i] = (int32_t)(((int64_t)i * 7919 + 13) % c.vocab_size);
  const std::span<const int32_t> all(ids), prefix(ids.data(), T - 1);
  std::vector<double> full, inc, full_cpu, inc_cpu;
  model.run_ids(all);  // warm-up: allocates the activations for T positions
  for (int r = 0; r < a.repeat; r++) {
    model.clear_cache();
    auto t0 = clk::now();
    double c0 = process_cpu_ms();
    model.run_ids(all);
    full.push_back(ms_since(t0));
    full_cpu.push_back(process_cpu_ms() - c0);
    if (T > 1) {
      model.clear_cache();
      model.run_ids(prefix);
      t0 = clk::now();
      c0 = process_cpu_ms();
      model.run_ids(all);
      inc.push_back(ms_since(t0));
      inc_cpu.push_back(process_cpu_ms() - c0);
    }
  }
  nlohmann::json j;
  j["tokens"] = T;
  j["repeat"] = a.repeat;
  j["load_ms"] = load_ms;
  j["forward_ms"] = median(full);
  j["incremental_ms"] = inc.empty() ? nullptr : nlohmann::json(median(inc));
  j["forward_cpu_ms"] = median(full_cpu);
  j["incremental_cpu_ms"] = inc_cpu.empty() ? nullptr : nlohmann::json(median(inc_cpu));
  j["rss_after_load_mb"] = rss_after_load_mb;
  j["peak_rss_mb"] = status_mb("VmHWM");
  j["weight_mb"] = model.weight_bytes() / 1048576.0;
  j["threads"] = model.threads();
  j["weights"] = headscope::weight_storage_name(model.weight_storage());
  j["simd"] = headscope::simd_info().arch;
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace headscope::cli
