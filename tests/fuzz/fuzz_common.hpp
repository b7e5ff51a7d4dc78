// Fixed inputs the fuzz targets load once: the tiny fixture model and GPT-2's vocabulary.
// Paths come from the environment (scripts/fuzz.sh sets them).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "headscope/tokenizer.hpp"

namespace fuzz {

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "fuzz: cannot read %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string env_dir(const char* name) {
  const char* v = std::getenv(name);
  if (!v) {
    std::fprintf(stderr, "fuzz: set %s (scripts/fuzz.sh does)\n", name);
    std::abort();
  }
  return v;
}

struct ModelFiles {
  std::string config, vocab, merges;
};

inline const ModelFiles& tiny_model_files() {
  static const ModelFiles files = [] {
    const std::string dir = env_dir("HEADSCOPE_FUZZ_MODEL_DIR");
    return ModelFiles{read_all(dir + "/config.json"), read_all(dir + "/vocab.json"), read_all(dir + "/merges.txt")};
  }();
  return files;
}

// A Llama-family fixture (grouped-query attention): config.json and tokenizer.json
struct LlamaFiles {
  std::string config, tokenizer_json;
};

inline const LlamaFiles& llama_model_files() {
  static const LlamaFiles files = [] {
    const std::string dir = env_dir("HEADSCOPE_FUZZ_LLAMA_DIR");
    return LlamaFiles{read_all(dir + "/config.json"), read_all(dir + "/tokenizer.json")};
  }();
  return files;
}

inline const headscope::Tokenizer& gpt2_tokenizer() {
  static const headscope::Tokenizer tok = [] {
    const std::string dir = env_dir("HEADSCOPE_FUZZ_GPT2_DIR");
    return headscope::Tokenizer::from_json(read_all(dir + "/vocab.json"), read_all(dir + "/merges.txt"));
  }();
  return tok;
}

}  // namespace fuzz
