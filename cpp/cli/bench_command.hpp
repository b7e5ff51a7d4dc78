// headscope bench: see bench_command.cpp.
#pragma once
#include "model_args.hpp"

namespace headscope::cli {
// one JSON line: load time, full and one-token runs at --tokens T (wall and CPU), memory
int bench_command(const Args& a);
}  // namespace headscope::cli
