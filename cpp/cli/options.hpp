// Options several headscope commands share, and the one reader of their numbers.
#pragma once
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include "headscope/error.hpp"
#include "headscope/model.hpp"

namespace headscope::cli {

// The one reader of numbers on the command line, for every command: all of `v` must be the number
// (no trailing text), finite, and for a whole number within [lo, hi]; otherwise an Error naming the
// flag and the value.
inline double parse_number(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const double x = std::stod(v, &used);
    if (used == v.size() && std::isfinite(x)) return x;
  } catch (const std::exception&) {
  }
  throw Error(flag + " expects a number, got \"" + v + "\"");
}

inline long long parse_whole(const std::string& flag, const std::string& v, long long lo, long long hi) {
  double x = 0;
  try {
    x = parse_number(flag, v);
  } catch (const Error&) {
    x = std::nan("");
  }
  if (!(x == std::floor(x) && x >= (double)lo && x <= (double)hi)) {
    const std::string range = hi >= 1000000000 ? ">= " + std::to_string(lo)
                                               : "within [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    throw Error(flag + " expects a whole number " + range + ", got \"" + v + "\"");
  }
  return (long long)x;
}

// an int-sized count or index
inline int parse_int(const std::string& flag, const std::string& v, int lo = 0) {
  return (int)parse_whole(flag, v, lo, 1000000000);
}

// --threads N: the kernels' threads, 0 for one per core (LoadOptions::threads, Trainer::set_threads)
inline int parse_threads(const std::string& v) {
  try {
    return (int)parse_whole("--threads", v, 0, kMaxThreads);
  } catch (const Error&) {
    throw Error("--threads expects a whole number within [0, " + std::to_string(kMaxThreads) +
                "] (0: one per core), got \"" + v + "\"");
  }
}

// The loop over a command's options (argv[2] on) that heads and generate share: own(arg, value) reads
// the command's own options and returns false for one it does not know (value() is the next argument,
// an Error when there is none); --model, --json, --weights and --threads are read here; anything else
// is an Error.
template <class Own>
void parse_options(int argc, char** argv, std::string& model, bool& json, LoadOptions& load, Own&& own) {
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model")
      model = value();
    else if (arg == "--json")
      json = true;
    else if (arg == "--weights")
      load.weights = parse_weight_storage(value());
    else if (arg == "--threads")
      load.threads = parse_threads(value());
    else if (!own(arg, value))
      throw Error("unknown option " + arg);
  }
}

// A long command's progress on stderr, "\rheadscope NAME:  42%", when stderr is a terminal
class TerminalProgress {
 public:
  explicit TerminalProgress(std::string name) : name_(std::move(name)), tty_(isatty(STDERR_FILENO)) {}
  std::function<bool(double)> callback() {
    return [this](double f) {
      const int p = (int)(f * 100);
      if (tty_ && p != last_) std::fprintf(stderr, "\rheadscope %s: %3d%%", name_.c_str(), last_ = p);
      return true;
    };
  }
  void done() const {
    if (tty_) std::fprintf(stderr, "\r");
  }

 private:
  std::string name_;
  bool tty_;
  int last_ = -1;
};

}  // namespace headscope::cli
