// How every headscope command ends on an error: the message on stderr after "headscope: ", the
// command's usage after messages that are about the command line, and the exit code (1 for bad
// input, 2 for anything unexpected); and command_main, the entry point of the commands that take their own
// options (heads, generate, patch).
#pragma once
#include <exception>
#include <initializer_list>
#include <iostream>
#include <string>
#include <utility>

#include "headscope/error.hpp"

namespace headscope::cli {

// Runs body() and returns its exit code; usage is printed after an Error whose message contains one
// of usage_hints.
template <class Body>
int report_errors(Body&& body, const char* usage, std::initializer_list<const char*> usage_hints) {
  try {
    return body();
  } catch (const headscope::Error& e) {
    std::cerr << "headscope: " << e.what() << "\n";
    const std::string what = e.what();
    for (const char* hint : usage_hints)
      if (what.find(hint) != std::string::npos) {
        std::cerr << usage;
        break;
      }
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "headscope: unexpected error: " << e.what() << "\n";
    return 2;
  }
}

// `headscope <command> --help` (or -h) prints usage and returns 0; anything else runs body() under
// report_errors, with usage after the messages about the command line.
template <class Body>
int command_main(int argc, char** argv, const char* usage, Body&& body) {
  if (argc == 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::cout << usage;
    return 0;
  }
  return report_errors(std::forward<Body>(body), usage, {"required", "unknown option", "needs a value"});
}

}  // namespace headscope::cli
