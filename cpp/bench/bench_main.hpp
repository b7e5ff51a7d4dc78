// The native benchmarks' main (bench_native.cpp, gemm_native.cpp): every failure (a missing folder,
// a bad checkpoint) is reported as a message, never an abort.
#pragma once
#include <cstdio>
#include <exception>

namespace headscope::bench {

inline int main_reporting_errors(int argc, char** argv, int (*run)(int, char**)) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}

}  // namespace headscope::bench
