// libFuzzer target: the safetensors reader, then the whole model loader and one forward pass.
// Any input must give a parsed file or headscope::Error, never a crash or an out-of-bounds read.
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_common.hpp"
#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  try {
    headscope::SafeTensors st(bytes);
    for (const auto& [name, info] : st.tensors()) {
      try {
        (void)st.read_f32(name, info.shape);
      } catch (const headscope::Error&) {
      }
    }
  } catch (const headscope::Error&) {
    return 0;
  }
  // a structurally valid file: try it as the weights of the tiny fixture model, and of a Llama-family
  // one (other names, [out, in] layouts, an RMSNorm per head)
  try {
    const auto& f = fuzz::tiny_model_files();
    headscope::Model m = headscope::Model::load_buffers(f.config, bytes, f.vocab, f.merges);
    m.run("ab c");
  } catch (const headscope::Error&) {
  }
  try {
    const auto& f = fuzz::llama_model_files();
    headscope::Model m = headscope::Model::load_buffers_tokenizer_json(f.config, bytes, f.tokenizer_json);
    m.run("ab c");
  } catch (const headscope::Error&) {
  }
  return 0;
}
