// SafeTensors: a validating reader for the safetensors format, over an in-memory buffer or any other
// ByteSource (a file read piece by piece, a JavaScript buffer), so a checkpoint is never held twice:
// each tensor's bytes go straight into the float vector that keeps them.
// Layout: u64 little-endian header length N, N bytes of JSON, then the tensor bytes; each tensor's
// data_offsets are relative to the end of the header. Everything is checked before any byte of
// tensor data is read or any buffer is sized from a value in the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace headscope {

struct TensorInfo {
  std::string dtype;  // "F32", "F16", "BF16" are readable; others are listed but rejected on read
  std::vector<int64_t> shape;
  std::size_t begin = 0, end = 0;  // byte range within the data section
};

// Random-access bytes. read() copies [offset, offset + n) into dst; the caller keeps the range
// within size(). Throws Error on a read failure.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  virtual void read(uint64_t offset, std::size_t n, uint8_t* dst) const = 0;
};
// The bytes of a buffer that must outlive the source.
std::shared_ptr<const ByteSource> memory_source(std::span<const uint8_t> bytes);
// A file, read on demand (only the header and one tensor at a time pass through memory).
std::shared_ptr<const ByteSource> file_source(const std::filesystem::path& path);

class SafeTensors {
 public:
  // Validates the header: length within the file, JSON well-formed, every entry with a dtype,
  // shape and data_offsets, offsets inside the data section, byte size = element count x dtype size
  // (overflow-checked), no two tensors overlapping. `bytes` must outlive this object.
  // `source` names the file in error messages.
  SafeTensors(std::span<const uint8_t> bytes, std::string source = "model.safetensors");
  // The same checks over any source; the source is kept for read_f32.
  SafeTensors(std::shared_ptr<const ByteSource> bytes, std::string source = "model.safetensors");

  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // throws if missing
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

  // The tensor converted to float32; throws unless its shape equals `expected_shape` and its dtype
  // is F32, F16 or BF16.
  std::vector<float> read_f32(const std::string& name, const std::vector<int64_t>& expected_shape) const;
  // The same into out (element count of the shape), e.g. straight into a weight's final storage.
  void read_f32_into(float* out, const std::string& name, const std::vector<int64_t>& expected_shape) const;
  // Bytes of the whole source (the file size).
  uint64_t source_bytes() const { return bytes_->size(); }

 private:
  void parse();
  std::shared_ptr<const ByteSource> bytes_;
  uint64_t data_begin_ = 0, data_size_ = 0;  // the data section within bytes_
  std::string source_;
  std::map<std::string, TensorInfo> tensors_;
};

std::string shape_to_string(const std::vector<int64_t>& shape);
float f16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t b);

}  // namespace headscope
