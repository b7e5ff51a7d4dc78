// headscope heads: see heads_command.cpp.
#pragma once

namespace headscope::cli {
// argv[1] is "heads". Returns the process exit code; prints errors itself.
int heads_command(int argc, char** argv);
}  // namespace headscope::cli
