// How every headscope command ends on an error: the message on stderr after "headscope: ", the
// command's usage after messages that are about the command line, and the exit code (1 for bad
// input, 2 for anything unexpected).
#pragma once
#include <exception>
#include <initializer_list>
#include <iostream>
#include <string>

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

}  // namespace headscope::cli
