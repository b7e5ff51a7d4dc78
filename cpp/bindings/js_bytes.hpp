// JsBytes: a safetensors ByteSource over a JavaScript Uint8Array (embind builds only).
// The checkpoint stays in its Uint8Array; each tensor's bytes are copied from it straight into the
// wasm memory that keeps them, so the file is never held twice inside the module.
#pragma once
#include <emscripten/val.h>

#include "headscope/safetensors.hpp"

namespace headscope {

class JsBytes final : public ByteSource {
 public:
  explicit JsBytes(emscripten::val u8) : u8_(std::move(u8)), size_(u8_["length"].as<double>()) {}
  uint64_t size() const override { return (uint64_t)size_; }
  void read(uint64_t offset, std::size_t n, uint8_t* dst) const override {
    if (n == 0) return;
    // the view is made right before the copy: nothing in between can grow (and detach) wasm memory
    emscripten::val(emscripten::typed_memory_view(n, dst))
        .call<void>("set", u8_.call<emscripten::val>("subarray", (double)offset, (double)(offset + n)));
  }

 private:
  emscripten::val u8_;
  double size_;
};

}  // namespace headscope
