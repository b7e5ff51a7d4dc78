// What the embind modules (the binding files here, cpp/bench/bench_embind.cpp) hand to JavaScript:
// copies of arrays as typed arrays (never views into wasm memory, which growth would detach), plain
// objects built from their fields, and the SIMD report.
#pragma once
#include <emscripten/val.h>

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace headscope::js {

using emscripten::val;

inline val f32_copy(const float* data, std::size_t n) {
  return val::global("Float32Array").new_(emscripten::typed_memory_view(n, data));
}
inline val f32_copy(const std::vector<float>& v) { return f32_copy(v.data(), v.size()); }
// Copies n floats into the Float32Array `array` from element `offset` on.
inline void f32_into(val& array, std::size_t offset, const float* data, std::size_t n) {
  array.call<void>("set", emscripten::typed_memory_view(n, data), offset);
}
inline val f64_copy(const std::vector<double>& v) {
  return val::global("Float64Array").new_(emscripten::typed_memory_view(v.size(), v.data()));
}
inline val i32_copy(const std::vector<int32_t>& v) {
  return val::global("Int32Array").new_(emscripten::typed_memory_view(v.size(), v.data()));
}
inline val u8_copy(const uint8_t* data, std::size_t n) {
  return val::global("Uint8Array").new_(emscripten::typed_memory_view(n, data));
}

// A JavaScript object with these fields, set in this order.
inline val object_of(std::initializer_list<std::pair<const char*, val>> fields) {
  val o = val::object();
  for (const auto& [name, value] : fields) o.set(name, value);
  return o;
}

// { arch, floatLanes, simd, relaxedMadd } of headscope::SimdInfo or kernels::SimdInfo
template <class Info>
val simd_object(const Info& s) {
  return object_of({{"arch", val(s.arch)},
                    {"floatLanes", val(s.float_lanes)},
                    {"simd", val(s.simd)},
                    {"relaxedMadd", val(s.relaxed_madd)}});
}

}  // namespace headscope::js
