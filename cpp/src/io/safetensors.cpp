#include "headscope/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "headscope/error.hpp"

namespace headscope {
namespace {

using json = nlohmann::json;

// The reference implementation caps headers at 100 MB; real GPT-2 headers are ~15 KB.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

std::size_t dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, std::size_t n, uint8_t* dst) const override {
    if (n) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::span<const uint8_t> bytes_;
};

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::filesystem::path& path) : path_(path), f_(path, std::ios::binary) {
    if (!f_) throw Error("cannot open " + path.string());
    f_.seekg(0, std::ios::end);
    size_ = (uint64_t)f_.tellg();
    if (!f_) throw Error("cannot read " + path.string());
  }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, std::size_t n, uint8_t* dst) const override {
    f_.seekg((std::streamoff)offset);
    f_.read(reinterpret_cast<char*>(dst), (std::streamsize)n);
    if (!f_ || (std::size_t)f_.gcount() != n)
      throw Error("cannot read " + std::to_string(n) + " bytes at offset " + std::to_string(offset) + " of " +
                  path_.string());
  }

 private:
  std::filesystem::path path_;
  mutable std::ifstream f_;  // reading moves its position: a source is used by one thread at a time
  uint64_t size_ = 0;
};

}  // namespace

std::shared_ptr<const ByteSource> memory_source(std::span<const uint8_t> bytes) {
  return std::make_shared<MemorySource>(bytes);
}
std::shared_ptr<const ByteSource> file_source(const std::filesystem::path& path) {
  return std::make_shared<FileSource>(path);
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;  // inf / nan
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_f32(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

SafeTensors::SafeTensors(std::span<const uint8_t> bytes, std::string source)
    : bytes_(memory_source(bytes)), source_(std::move(source)) {
  parse();
}

SafeTensors::SafeTensors(std::shared_ptr<const ByteSource> bytes, std::string source)
    : bytes_(std::move(bytes)), source_(std::move(source)) {
  parse();
}

void SafeTensors::parse() {
  const std::string& src = source_;
  const uint64_t file_size = bytes_->size();
  if (file_size < 8)
    throw Error(src + ": file is " + std::to_string(file_size) + " bytes, too short for a safetensors header");
  uint8_t len_bytes[8];
  bytes_->read(0, 8, len_bytes);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8)
    throw Error(src + ": header length " + std::to_string(header_len) + " is larger than the file (" +
                std::to_string(file_size) + " bytes); truncated or not a safetensors file");
  if (header_len > kMaxHeaderBytes)
    throw Error(src + ": header length " + std::to_string(header_len) + " exceeds 100 MB");
  std::string header_text((std::size_t)header_len, '\0');
  bytes_->read(8, (std::size_t)header_len, reinterpret_cast<uint8_t*>(header_text.data()));
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::exception& e) {
    throw Error(src + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(src + ": header is not a JSON object");
  data_begin_ = 8 + header_len;
  data_size_ = file_size - data_begin_;

  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = src + ": tensor \"" + name + "\": ";
    if (!entry.is_object()) throw Error(where + "entry is not an object");
    TensorInfo t;
    auto dt = entry.find("dtype");
    if (dt == entry.end() || !dt->is_string()) throw Error(where + "missing dtype");
    t.dtype = dt->get<std::string>();
    const std::size_t elem = dtype_size(t.dtype);
    if (elem == 0) throw Error(where + "unknown dtype \"" + t.dtype + "\"");
    auto sh = entry.find("shape");
    if (sh == entry.end() || !sh->is_array()) throw Error(where + "missing shape");
    if (sh->size() > 8) throw Error(where + "has " + std::to_string(sh->size()) + " dimensions");
    uint64_t count = 1;
    for (auto& d : *sh) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw Error(where + "shape entries must be non-negative integers");
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / dim / elem)
        throw Error(where + "shape " + sh->dump() + " overflows");
      count *= dim;
      t.shape.push_back((int64_t)dim);
    }
    auto off = entry.find("data_offsets");
    if (off == entry.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      throw Error(where + "data_offsets must be two non-negative integers");
    const uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    if (b > e || e > data_size_)
      throw Error(where + "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                  "] lie outside the data section (" + std::to_string(data_size_) + " bytes)");
    if (e - b != count * elem)
      throw Error(where + "dtype " + t.dtype + " and shape " + shape_to_string(t.shape) + " need " +
                  std::to_string(count * elem) + " bytes but data_offsets give " + std::to_string(e - b));
    t.begin = (std::size_t)b;
    t.end = (std::size_t)e;
    if (e > b) ranges.emplace_back(t.begin, t.end);
    tensors_.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); i++)
    if (ranges[i].first < ranges[i - 1].second)
      throw Error(src + ": tensors overlap at data bytes [" + std::to_string(ranges[i].first) + ", " +
                  std::to_string(ranges[i - 1].second) + ")");
}

const TensorInfo& SafeTensors::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(source_ + ": missing tensor \"" + name + "\"");
  return it->second;
}

std::vector<float> SafeTensors::read_f32(const std::string& name, const std::vector<int64_t>& expected_shape) const {
  const TensorInfo& t = info(name);
  std::size_t count = 1;
  for (int64_t d : t.shape) count *= (std::size_t)d;
  std::vector<float> out(count);
  read_f32_into(out.data(), name, expected_shape);
  return out;
}

void SafeTensors::read_f32_into(float* out, const std::string& name, const std::vector<int64_t>& expected_shape) const {
  const TensorInfo& t = info(name);
  if (t.shape != expected_shape)
    throw Error(source_ + ": tensor \"" + name + "\" has shape " + shape_to_string(t.shape) + ", expected " +
                shape_to_string(expected_shape));
  const uint64_t at = data_begin_ + t.begin;
  const std::size_t bytes = t.end - t.begin;
  if (t.dtype == "F32") {
    bytes_->read(at, bytes, reinterpret_cast<uint8_t*>(out));  // little-endian hosts only (x86, wasm, arm64)
  } else if (t.dtype == "F16" || t.dtype == "BF16") {
    // converted in chunks, so a large tensor never needs a second full-size buffer
    const bool is_f16 = t.dtype == "F16";
    constexpr std::size_t kChunk = 1 << 16;  // elements
    std::vector<uint8_t> raw(std::min(bytes, 2 * kChunk));
    for (std::size_t i0 = 0; i0 < bytes / 2; i0 += kChunk) {
      const std::size_t n = std::min(kChunk, bytes / 2 - i0);
      bytes_->read(at + 2 * i0, 2 * n, raw.data());
      for (std::size_t i = 0; i < n; i++) {
        const uint16_t h = (uint16_t)(raw[2 * i] | (raw[2 * i + 1] << 8));
        out[i0 + i] = is_f16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
    }
  } else {
    throw Error(source_ + ": tensor \"" + name + "\" has dtype " + t.dtype + "; only F32, F16 and BF16 are supported");
  }
}

}  // namespace headscope
