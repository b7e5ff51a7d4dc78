// headscope::Error: the one exception type the engine throws for bad input.
// Its what() names the problem (which file, tensor, key or byte offset) so a user can act on it;
// embind turns it into a JavaScript Error with the same message.
#pragma once
#include <stdexcept>
#include <string>

namespace headscope {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace headscope
