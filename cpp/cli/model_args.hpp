// The flags headscope run, info and bench share (a model folder, a text or ids, the heads to switch
// off or inspect, the weights' storage and threads), read once for the three commands.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headscope/model.hpp"

namespace headscope::cli {

struct Args {
  std::string command, model, text;
  bool json = false, has_text = false;
  std::vector<int32_t> ids;  // --ids
  int top = 10;
  int tokens = 0, repeat = 5;
  std::vector<HeadRef> ablate;
  std::optional<HeadRef> inspect;  // --inspect L:H
  LoadOptions load;
};

// argv[1] is run, info or bench; throws Error for a missing or bad flag
Args parse_model_args(int argc, char** argv);

}  // namespace headscope::cli
