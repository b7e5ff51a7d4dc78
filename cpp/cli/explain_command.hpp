// headscope explain and headscope circuits: see explain_command.cpp.
#pragma once

namespace headscope::cli {
// argv[1] is "explain" / "circuits". Return the process exit code; print errors themselves.
int explain_command(int argc, char** argv);
int circuits_command(int argc, char** argv);
}  // namespace headscope::cli
