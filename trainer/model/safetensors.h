// The safetensors format, torch-free: a reader over raw bytes (memory-mapped
// files) and a streaming writer. https://github.com/huggingface/safetensors
//
//   [8 bytes: header length N, little-endian u64]
//   [N bytes: JSON {"__metadata__": {str: str}, "<name>": {"dtype": "BF16",
//              "shape": [..], "data_offsets": [begin, end]}, ...}]
//   [data section: each tensor's row-major little-endian bytes at
//              [begin, end) relative to the start of the section]
//
// Validation follows the reference implementation: the data ranges must tile
// the data section exactly (no gap, no overlap, no trailing or missing byte)
// and each range must hold shape-product * dtype-size bytes. Every error names
// the file and, where there is one, the tensor.
//
// Thread safety: a SafetensorsFile is immutable after Open and may be read
// from many threads. A SafetensorsWriter is not thread safe.
#ifndef SKRULL_TRAINER_MODEL_SAFETENSORS_H_
#define SKRULL_TRAINER_MODEL_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::model {

// Element types of the format. F8 types are valid safetensors but are not
// supported here: a file holding one fails to open with "unsupported dtype".
enum class DType { kBool, kU8, kI8, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64 };

// "F32", "BF16", ... as written in headers.
const char* DTypeName(DType dtype);
std::optional<DType> DTypeFromName(std::string_view name);
size_t DTypeSize(DType dtype);
bool IsFloatingPoint(DType dtype);  // F16, BF16, F32, F64

// Largest header accepted (the reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0;  // offsets into the data section
  uint64_t data_end = 0;

  int64_t NumElements() const;
  uint64_t NumBytes() const { return data_end - data_begin; }
};

// "[2, 3]".
std::string ShapeToString(const std::vector<int64_t>& shape);

// A validated, read-only safetensors file.
class SafetensorsFile {
 public:
  // Memory-maps and validates `path`. NotFound when missing; InvalidArgument
  // (naming the file and tensor) for a truncated file, a bad header, an
  // unsupported dtype or inconsistent offsets; IoError when the OS refuses.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // The same validation over bytes in memory; `origin` names them in errors.
  static StatusOr<std::unique_ptr<SafetensorsFile>> FromBytes(std::string bytes,
                                                              const std::string& origin);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& origin() const { return origin_; }
  // Sorted by data offset (file order).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorInfo* Find(const std::string& name) const;
  // The tensor's raw bytes; valid while this object lives. No alignment is
  // guaranteed: copy before reinterpreting.
  std::string_view Data(const TensorInfo& info) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  Status Parse();

  std::string origin_;
  std::string owned_;    // FromBytes
  void* map_ = nullptr;  // Open: the mapping of the whole file
  size_t map_bytes_ = 0;
  const char* bytes_ = nullptr;
  uint64_t size_ = 0;
  uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Builds a safetensors file. Tensors are laid out in the order added; the
// header is padded with spaces to a multiple of 8 bytes, as the reference
// writer does. Metadata defaults to {"format": "pt"} (what transformers
// expects when loading).
class SafetensorsWriter {
 public:
  // Writes exactly the tensor's NumBytes() into `dst`. Called once per tensor,
  // in Add order, while writing; lets callers stream tensors that are not in
  // host memory (one tensor's bytes are held at a time).
  using FillFn = std::function<Status(char* dst, size_t bytes)>;

  SafetensorsWriter();
  void SetMetadata(const std::string& key, const std::string& value);
  // InvalidArgument for an empty or duplicate name, "__metadata__", or a
  // negative dimension.
  Status Add(const std::string& name, DType dtype, std::vector<int64_t> shape, FillFn fill);
  // Copies `bytes` (must be shape-product * dtype-size long).
  Status AddBytes(const std::string& name, DType dtype, std::vector<int64_t> shape,
                  std::string_view bytes);

  // The header JSON including padding (without the 8-byte length prefix).
  std::string HeaderJson() const;
  // The whole file in memory.
  StatusOr<std::string> ToBytes() const;
  // Streams the file to `path` atomically: `path.tmp.<pid>`, fsync, rename,
  // fsync the directory; creates missing parent directories.
  Status WriteFile(const std::string& path) const;

 private:
  struct Entry {
    TensorInfo info;
    FillFn fill;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_bytes_ = 0;
};

// Torch-free conversions between the floating dtypes and float32 (round to
// nearest even, NaN preserved), little-endian hosts. `n` is an element count.
void ConvertToFloat32(DType src_dtype, const void* src, size_t n, float* dst);
void ConvertFromFloat32(const float* src, size_t n, DType dst_dtype, void* dst);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_SAFETENSORS_H_
