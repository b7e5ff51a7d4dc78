// JsBytes: a safetensors ByteSource over a JavaScript Uint8Array, or any object with its length and
// subarray(begin, end) (a Blob read a piece at a time: weightSource in web/lib/files.js) (embind
// builds only). The checkpoint stays in JavaScript; each tensor's bytes are copied from it straight
// into the wasm memory that keeps them, so the file is never held twice inside the module.
#pragma once
#include <emscripten/val.h>

#include <string>

#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"

namespace headscope {

class JsBytes final : public ByteSource {
 public:
  explicit JsBytes(emscripten::val u8) : u8_(std::move(u8)), size_(u8_["length"].as<double>()) {}
  uint64_t size() const override { return (uint64_t)size_; }
  void read(uint64_t offset, std::size_t n, uint8_t* dst) const override {
    if (n == 0) return;
    // a Blob read in pieces (weightSource in web/lib/files.js) gives null where a piece cannot be read
    const emscripten::val piece = u8_.call<emscripten::val>("subarray", (double)offset, (double)(offset + n));
    if (!piece.instanceof (emscripten::val::global("Uint8Array")) || piece["length"].as<double>() != (double)n) {
      const emscripten::val error = u8_["error"];
      const std::string why = error.isString() ? error.as<std::string>() : "";
      throw Error("model.safetensors could not be read at bytes " + std::to_string(offset) + "-" +
                  std::to_string(offset + n) +
                  (why.empty() ? ": the file ended early (did it change after it was picked?)" : ": " + why));
    }
    // the view is made right before the copy: nothing in between can grow (and detach) wasm memory
    emscripten::val(emscripten::typed_memory_view(n, dst)).call<void>("set", piece);
  }

 private:
  emscripten::val u8_;
  double size_;
};

}  // namespace headscope
