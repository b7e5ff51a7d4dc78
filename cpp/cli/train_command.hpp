// headscope train: see train_command.cpp.
#pragma once

namespace headscope::cli {
// argv[1] is "train". Returns the process exit code; prints errors itself.
int train_command(int argc, char** argv);
}  // namespace headscope::cli
