// headscope patch: see patch_command.cpp.
#pragma once

namespace headscope::cli {
// argv[1] is "patch". Returns the process exit code; prints errors itself.
int patch_command(int argc, char** argv);
}  // namespace headscope::cli
