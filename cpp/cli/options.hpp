// Options several headscope commands share.
#pragma once
#include <string>

#include "headscope/error.hpp"
#include "headscope/model.hpp"

namespace headscope::cli {

// --threads N: the kernels' threads, 0 for one per core (LoadOptions::threads, Trainer::set_threads)
inline int parse_threads(const std::string& v) {
  std::size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < 0 || n > kMaxThreads)
    throw Error("--threads expects a whole number within [0, " + std::to_string(kMaxThreads) + "] (0: one per core), got \"" + v + "\"");
  return n;
}

}  // namespace headscope::cli
