#include "trainer/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace skrull::model {
namespace {

struct DTypeDesc {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeDesc kDTypes[] = {
    {DType::kBool, "BOOL", 1}, {DType::kU8, "U8", 1},   {DType::kI8, "I8", 1},
    {DType::kI16, "I16", 2},   {DType::kU16, "U16", 2}, {DType::kF16, "F16", 2},
    {DType::kBF16, "BF16", 2}, {DType::kI32, "I32", 4}, {DType::kU32, "U32", 4},
    {DType::kF32, "F32", 4},   {DType::kF64, "F64", 8}, {DType::kI64, "I64", 8},
    {DType::kU64, "U64", 8},
};

const DTypeDesc& Desc(DType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d;
  }
  SKRULL_CHECK(false) << "unknown DType " << static_cast<int>(dtype);
  return kDTypes[0];
}

uint64_t ReadLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string Le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// Product of dims times `elem`, or nullopt on overflow. Also nullopt when the
// product of the non-zero dims exceeds int64: NumElements multiplies the dims
// in order, so [2^32, 2^31, 0] (0 bytes) would overflow there.
std::optional<uint64_t> CheckedBytes(const std::vector<int64_t>& shape, size_t elem) {
  constexpr uint64_t kMaxElements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t nonzero_elements = 1;
  bool has_zero = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (nonzero_elements > kMaxElements / static_cast<uint64_t>(d)) return std::nullopt;
    nonzero_elements *= static_cast<uint64_t>(d);
  }
  if (has_zero) return 0;
  if (nonzero_elements > std::numeric_limits<uint64_t>::max() / elem) return std::nullopt;
  return nonzero_elements * elem;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float Bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffff;
  if (abs > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs < 0x33000000u) return sign;  // < 2^-25 rounds to zero
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    // value = mant * 2^(exp-150); half subnormal unit = 2^-24 -> mant >> (126 - exp).
    uint32_t drop = 126 - exp;
    uint32_t q = mant >> drop;
    uint32_t rem = mant & ((1u << drop) - 1);
    uint32_t half = 1u << (drop - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // round to nearest even at bit 13
  return sign | static_cast<uint16_t>(((rounded >> 13) - ((127 - 15) << 10)));
}

Status HeaderError(const std::string& origin, const std::string& what) {
  return InvalidArgumentError(origin + ": invalid safetensors header: " + what);
}

}  // namespace

const char* DTypeName(DType dtype) { return Desc(dtype).name; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (name == d.name) return d.dtype;
  }
  return std::nullopt;
}

size_t DTypeSize(DType dtype) { return Desc(dtype).size; }

bool IsFloatingPoint(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 || dtype == DType::kF32 ||
         dtype == DType::kF64;
}

int64_t TensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------- reading

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFoundError(path + ": no such file");
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError(path + ": stat failed: " + std::strerror(err));
  }
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->origin_ = path;
  file->size_ = static_cast<uint64_t>(st.st_size);
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return IoError(path + ": mmap failed: " + std::strerror(err));
    }
    file->map_ = p;
    file->map_bytes_ = static_cast<size_t>(st.st_size);
    file->bytes_ = static_cast<const char*>(p);
  }
  ::close(fd);
  SKRULL_RETURN_IF_ERROR(file->Parse());
  return file;
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::FromBytes(std::string bytes,
                                                                      const std::string& origin) {
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->origin_ = origin;
  file->owned_ = std::move(bytes);
  file->bytes_ = file->owned_.data();
  file->size_ = file->owned_.size();
  SKRULL_RETURN_IF_ERROR(file->Parse());
  return file;
}

Status SafetensorsFile::Parse() {
  if (size_ < 8) {
    return InvalidArgumentError(origin_ + ": truncated safetensors file: " + std::to_string(size_) +
                                " bytes, shorter than the 8-byte header length");
  }
  uint64_t header_bytes = ReadLe64(bytes_);
  if (header_bytes > kMaxSafetensorsHeaderBytes) {
    return HeaderError(origin_, "header length " + std::to_string(header_bytes) +
                                    " exceeds the limit of " +
                                    std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (header_bytes > size_ - 8) {
    return InvalidArgumentError(origin_ + ": truncated safetensors file: header length " +
                                std::to_string(header_bytes) + " but only " +
                                std::to_string(size_ - 8) + " bytes follow");
  }
  data_start_ = 8 + header_bytes;
  const uint64_t data_bytes = size_ - data_start_;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes_ + 8, bytes_ + data_start_);
  } catch (const nlohmann::json::exception& e) {  // parse_error; out_of_range for 1e999
    return HeaderError(origin_, std::string("not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return HeaderError(origin_, "top level is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return HeaderError(origin_, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          return HeaderError(origin_, "__metadata__." + m.key() + " is not a string");
        }
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!v.is_object()) return HeaderError(origin_, where + " is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) {
      return HeaderError(origin_, where + ": missing string field 'dtype'");
    }
    if (sh == v.end() || !sh->is_array()) {
      return HeaderError(origin_, where + ": missing array field 'shape'");
    }
    if (off == v.end() || !off->is_array() || off->size() != 2) {
      return HeaderError(origin_, where + ": 'data_offsets' must be [begin, end]");
    }
    TensorInfo info;
    info.name = name;
    std::string dtype_name = dt->get<std::string>();
    std::optional<DType> dtype = DTypeFromName(dtype_name);
    if (!dtype) {
      return InvalidArgumentError(origin_ + ": tensor '" + name + "' has unsupported dtype '" +
                                  dtype_name +
                                  "' (supported: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, "
                                  "F32, F64, I64, U64)");
    }
    info.dtype = *dtype;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) {
        return HeaderError(origin_, where + ": shape entries must be non-negative integers");
      }
      info.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    if (!(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned()) {
      return HeaderError(origin_, where + ": data_offsets must be non-negative integers");
    }
    info.data_begin = (*off)[0].get<uint64_t>();
    info.data_end = (*off)[1].get<uint64_t>();
    if (info.data_end < info.data_begin) {
      return HeaderError(origin_, where + ": data_offsets end " + std::to_string(info.data_end) +
                                      " < begin " + std::to_string(info.data_begin));
    }
    std::optional<uint64_t> expected = CheckedBytes(info.shape, DTypeSize(info.dtype));
    if (!expected || *expected != info.NumBytes()) {
      return HeaderError(origin_, where + ": data_offsets span " + std::to_string(info.NumBytes()) +
                                      " bytes but " + DTypeName(info.dtype) + " " +
                                      ShapeToString(info.shape) + " needs " +
                                      (expected ? std::to_string(*expected) : "overflow"));
    }
    tensors_.push_back(std::move(info));
  }

  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.data_begin != b.data_begin ? a.data_begin < b.data_begin : a.data_end < b.data_end;
  });
  uint64_t cursor = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (t.data_begin < cursor) {
      return HeaderError(origin_, "tensor '" + t.name + "' data [" + std::to_string(t.data_begin) +
                                      ", " + std::to_string(t.data_end) + ") overlaps tensor '" +
                                      tensors_[i - 1].name + "'");
    }
    if (t.data_begin > cursor) {
      return HeaderError(origin_, "gap of " + std::to_string(t.data_begin - cursor) +
                                      " bytes before tensor '" + t.name + "'");
    }
    if (t.data_end > data_bytes) {
      return InvalidArgumentError(origin_ + ": truncated safetensors file: tensor '" + t.name +
                                  "' needs data bytes [" + std::to_string(t.data_begin) + ", " +
                                  std::to_string(t.data_end) + ") but the data section has " +
                                  std::to_string(data_bytes) + " bytes");
    }
    cursor = t.data_end;
    index_[t.name] = i;
  }
  if (cursor != data_bytes) {
    return HeaderError(origin_, std::to_string(data_bytes - cursor) +
                                    " trailing bytes after the last tensor's data");
  }
  return OkStatus();
}

const TensorInfo* SafetensorsFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::string_view SafetensorsFile::Data(const TensorInfo& info) const {
  return std::string_view(bytes_ + data_start_ + info.data_begin, info.NumBytes());
}

// ---------------------------------------------------------------- writing

SafetensorsWriter::SafetensorsWriter() { metadata_["format"] = "pt"; }

void SafetensorsWriter::SetMetadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

Status SafetensorsWriter::Add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                              FillFn fill) {
  if (name.empty() || name == "__metadata__") {
    return InvalidArgumentError("safetensors: invalid tensor name '" + name + "'");
  }
  for (const auto& e : entries_) {
    if (e.info.name == name) {
      return InvalidArgumentError("safetensors: duplicate tensor name '" + name + "'");
    }
  }
  std::optional<uint64_t> bytes = CheckedBytes(shape, DTypeSize(dtype));
  if (!bytes) {
    return InvalidArgumentError("safetensors: tensor '" + name + "' has invalid shape " +
                                ShapeToString(shape));
  }
  Entry e;
  e.info.name = name;
  e.info.dtype = dtype;
  e.info.shape = std::move(shape);
  e.info.data_begin = data_bytes_;
  e.info.data_end = data_bytes_ + *bytes;
  e.fill = std::move(fill);
  data_bytes_ = e.info.data_end;
  entries_.push_back(std::move(e));
  return OkStatus();
}

Status SafetensorsWriter::AddBytes(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                   std::string_view bytes) {
  std::optional<uint64_t> expected = CheckedBytes(shape, DTypeSize(dtype));
  if (!expected || *expected != bytes.size()) {
    return InvalidArgumentError("safetensors: tensor '" + name + "' " + DTypeName(dtype) + " " +
                                ShapeToString(shape) + " given " + std::to_string(bytes.size()) +
                                " bytes");
  }
  auto copy = std::make_shared<std::string>(bytes);
  return Add(name, dtype, std::move(shape), [copy](char* dst, size_t n) {
    std::memcpy(dst, copy->data(), n);
    return OkStatus();
  });
}

std::string SafetensorsWriter::HeaderJson() const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  for (const auto& e : entries_) {
    header[e.info.name] = {{"dtype", DTypeName(e.info.dtype)},
                           {"shape", e.info.shape},
                           {"data_offsets", {e.info.data_begin, e.info.data_end}}};
  }
  std::string text = header.dump();
  size_t padded = (8 + text.size() + 7) / 8 * 8 - 8;
  text.resize(padded, ' ');
  return text;
}

StatusOr<std::string> SafetensorsWriter::ToBytes() const {
  std::string header = HeaderJson();
  std::string out = Le64(header.size()) + header;
  size_t base = out.size();
  out.resize(base + data_bytes_);
  for (const auto& e : entries_) {
    SKRULL_RETURN_IF_ERROR(e.fill(out.data() + base + e.info.data_begin, e.info.NumBytes()));
  }
  return out;
}

namespace {
Status WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": write failed: " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}
}  // namespace

Status SafetensorsWriter::WriteFile(const std::string& path) const {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError(dir.string() + ": cannot create directory: " + ec.message());
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return IoError(tmp + ": cannot create: " + std::strerror(errno));
  auto fail = [&](Status s) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  std::string header = HeaderJson();
  std::string prefix = Le64(header.size()) + header;
  Status s = WriteAll(fd, prefix.data(), prefix.size(), tmp);
  if (!s.ok()) return fail(s);
  std::string buffer;
  for (const auto& e : entries_) {
    buffer.resize(e.info.NumBytes());
    s = e.fill(buffer.data(), buffer.size());
    if (!s.ok()) return fail(s.WithContext(path + ": tensor '" + e.info.name + "'"));
    s = WriteAll(fd, buffer.data(), buffer.size(), tmp);
    if (!s.ok()) return fail(s);
  }
  if (::fsync(fd) != 0) return fail(IoError(tmp + ": fsync failed: " + std::strerror(errno)));
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError(path + ": rename from " + tmp + " failed: " + std::strerror(err));
  }
  return FsyncPath(dir.string());
}

// ---------------------------------------------------------------- conversion

void ConvertToFloat32(DType src_dtype, const void* src, size_t n, float* dst) {
  const char* p = static_cast<const char*>(src);
  switch (src_dtype) {
    case DType::kF32:
      std::memcpy(dst, p, n * 4);
      return;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        dst[i] = static_cast<float>(d);
      }
      return;
    case DType::kBF16:
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = src_dtype == DType::kBF16 ? Bf16ToFloat(h) : HalfToFloat(h);
      }
      return;
    default:
      SKRULL_CHECK(false) << "ConvertToFloat32: " << DTypeName(src_dtype) << " is not floating";
  }
}

void ConvertFromFloat32(const float* src, size_t n, DType dst_dtype, void* dst) {
  char* p = static_cast<char*>(dst);
  switch (dst_dtype) {
    case DType::kF32:
      std::memcpy(p, src, n * 4);
      return;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double d = src[i];
        std::memcpy(p + 8 * i, &d, 8);
      }
      return;
    case DType::kBF16:
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = dst_dtype == DType::kBF16 ? FloatToBf16(src[i]) : FloatToHalf(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    default:
      SKRULL_CHECK(false) << "ConvertFromFloat32: " << DTypeName(dst_dtype) << " is not floating";
  }
}

}  // namespace skrull::model
