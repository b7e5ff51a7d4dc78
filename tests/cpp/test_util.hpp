// Small helpers shared by the Catch2 tests.
#pragma once
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "headscope/model.hpp"

namespace test_util {

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("test fixture missing: " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  const std::string s = read_text(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

// n values drawn from N(0, scale^2)
inline std::vector<float> random_normal(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// float32's unit roundoff, 2^-24: the error bounds of the numeric tests are written in it
inline constexpr double kUnitRoundoff = 5.9604644775390625e-08;

// The bits of a float32: compared as bits, -0 differs from 0 and NaNs compare by their payloads
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// a and b hold the same floats, bit for bit
inline void require_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); i++)
    if (bits_of(a[i]) != bits_of(b[i])) {
      INFO(what << ": element " << i << " of " << a.size() << ": " << a[i] << " vs " << b[i]);
      REQUIRE(bits_of(a[i]) == bits_of(b[i]));
    }
}

// The random GPT-2 fixtures of tests/fixtures/models/ that have PyTorch float64 references
// (tests/fixtures/README.md): head sizes 4, 12, 20 and 5
inline const std::vector<std::string> kFixtureModels = {"tiny-hs4", "odd-hs12", "odd-hs20", "hs5"};

// The random Llama-family fixtures (scripts/fixtures/ (reference.py, inside.py, greedy.py), the same reference
// formats): grouped-query (4 query heads over 2 key/value heads), multi-query with llama3 rope scaling and an untied LM
// head, Qwen3 with q/k norms and head_dim 12 wider than hidden / heads, and plain multi-head with head_dim 4 narrower
// than it
inline const std::vector<std::string> kLlamaFixtureModels = {"llama-gqa", "llama-mqa", "qwen3-qknorm", "llama-mha"};

// Both families: what every model the engine runs must do
inline std::vector<std::string> all_fixture_models() {
  std::vector<std::string> all = kFixtureModels;
  all.insert(all.end(), kLlamaFixtureModels.begin(), kLlamaFixtureModels.end());
  return all;
}

inline std::string fixture_dir(const std::string& name) {
  return std::string(HEADSCOPE_FIXTURES_DIR) + "/models/" + name;
}

// A model folder (config.json, weights, and vocab.json + merges.txt or tokenizer.json) through
// Model::load_buffers, the loader the wasm build uses
inline headscope::Model load_dir(const std::string& dir, const headscope::LoadOptions& options = {},
                                 const std::string& weights_file = "model.safetensors") {
  if (!std::ifstream(dir + "/vocab.json"))
    return headscope::Model::load_buffers_tokenizer_json(read_text(dir + "/config.json"),
                                                         read_bytes(dir + "/" + weights_file),
                                                         read_text(dir + "/tokenizer.json"), options);
  return headscope::Model::load_buffers(read_text(dir + "/config.json"), read_bytes(dir + "/" + weights_file),
                                        read_text(dir + "/vocab.json"), read_text(dir + "/merges.txt"), options);
}

inline headscope::Model load_fixture(const std::string& name, const std::string& weights_file = "model.safetensors",
                                     const headscope::LoadOptions& options = {}) {
  return load_dir(fixture_dir(name), options, weights_file);
}

}  // namespace test_util
