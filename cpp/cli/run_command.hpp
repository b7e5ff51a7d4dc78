// headscope run and info: see run_command.cpp.
#pragma once
#include "model_args.hpp"

namespace headscope::cli {
// a run of a text or ids (tokens, the next tokens, or --json: every attention map and one head's
// insides), or the model's shape (info)
int run_command(const Args& a);
}  // namespace headscope::cli
