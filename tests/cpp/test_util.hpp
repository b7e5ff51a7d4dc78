// Small helpers shared by the Catch2 tests.
#pragma once
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

}  // namespace test_util
