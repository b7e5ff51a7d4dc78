// headscope accuracy: see accuracy_command.cpp.
#pragma once

namespace headscope::cli {
// argv[1] is "accuracy". Returns the process exit code; prints errors itself.
int accuracy_command(int argc, char** argv);
}  // namespace headscope::cli
