// The binding files' one rule for C++ exceptions (embind.cpp's header comment): guarded(fn) runs fn and,
// on an exception, records its message for lastError() and returns null (or `failed`).
#pragma once
#include <emscripten/val.h>

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include "headscope/error.hpp"

namespace headscope::js {

using emscripten::val;

// The last recorded message, shared by every binding file (an inline function's one static)
inline std::string& last_error() {
  static std::string message;
  return message;
}

// Runs fn; on any C++ exception records its message and returns `failed` instead.
template <class F, class R = decltype(std::declval<F>()())>
R guarded(F&& fn, R failed) {
  try {
    return fn();
  } catch (const std::exception& e) {
    last_error() = e.what();
  } catch (...) {
    last_error() = "headscope: unknown C++ exception";
  }
  return failed;
}
template <class F>
val guarded(F&& fn) {
  return guarded(std::forward<F>(fn), val::null());
}

inline std::string string_of(const val& v, const char* what) {
  if (!v.isString()) throw Error(std::string(what) + " must be a string");
  return v.as<std::string>();
}

// A seed from JavaScript's number: a whole number up to 2^53 - 1 (Number.MAX_SAFE_INTEGER)
inline uint64_t seed_of(double seed) {
  if (!(seed >= 0 && seed <= 9007199254740991.0)) throw Error("seed must be a whole number >= 0");
  return (uint64_t)seed;
}

}  // namespace headscope::js
