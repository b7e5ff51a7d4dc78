// headscope generate: see generate_command.cpp.
#pragma once

namespace headscope::cli {
// argv[1] is "generate". Returns the process exit code; prints errors itself.
int generate_command(int argc, char** argv);
}  // namespace headscope::cli
