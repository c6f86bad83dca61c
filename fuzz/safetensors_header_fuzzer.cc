// Fuzz target: the safetensors reader (trainer/model/safetensors.h), which
// parses an untrusted 8-byte length, a JSON header and the tensor ranges of
// weight files. Torch-free. Any bytes must end in a validated file or an
// InvalidArgument, never a crash or an out-of-bounds read. An accepted file
// must hold what the header promises: every tensor's Data() inside the
// buffer with shape-product * dtype-size bytes, tensors tiling the data
// section, and a writer round trip (SafetensorsWriter -> FromBytes) that gives
// back the same tensors.
//
// Each input is tried twice: as given, and with the length prefix rewritten to
// end the header at the input's last '}' (so mutations inside the JSON reach
// the header checks instead of stopping at "truncated").
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "trainer/model/safetensors.h"

namespace {

using skrull::StatusOr;
using skrull::model::SafetensorsFile;
using skrull::model::SafetensorsWriter;
using skrull::model::TensorInfo;

void CheckAcceptedFile(const SafetensorsFile& file, size_t input_bytes) {
  uint64_t cursor = 0;
  for (const TensorInfo& t : file.tensors()) {
    SKRULL_CHECK(t.data_begin == cursor) << t.name << ": ranges do not tile the data section";
    cursor = t.data_end;
    const std::string_view bytes = file.Data(t);
    SKRULL_CHECK(bytes.size() == t.NumBytes()) << t.name;
    SKRULL_CHECK(t.NumElements() >= 0) << t.name;
    SKRULL_CHECK(static_cast<uint64_t>(t.NumElements()) * skrull::model::DTypeSize(t.dtype) ==
                 t.NumBytes())
        << t.name << ": " << skrull::model::ShapeToString(t.shape);
    SKRULL_CHECK(t.NumBytes() <= input_bytes) << t.name;
    SKRULL_CHECK(file.Find(t.name) == &t) << t.name;
  }

  SafetensorsWriter writer;
  for (const auto& [key, value] : file.metadata()) writer.SetMetadata(key, value);
  for (const TensorInfo& t : file.tensors()) {
    // The writer refuses names the reader allows (an empty name); no round
    // trip for those files.
    if (!writer.AddBytes(t.name, t.dtype, t.shape, file.Data(t)).ok()) return;
  }
  StatusOr<std::string> bytes = writer.ToBytes();
  SKRULL_CHECK(bytes.ok()) << bytes.status().ToString();
  StatusOr<std::unique_ptr<SafetensorsFile>> again =
      SafetensorsFile::FromBytes(std::move(*bytes), "round-trip.safetensors");
  SKRULL_CHECK(again.ok()) << "writer output does not read back: " << again.status().ToString();
  SKRULL_CHECK((*again)->tensors().size() == file.tensors().size());
  for (const TensorInfo& t : file.tensors()) {
    const TensorInfo* u = (*again)->Find(t.name);
    SKRULL_CHECK(u != nullptr) << t.name << " lost in the round trip";
    SKRULL_CHECK(u->dtype == t.dtype && u->shape == t.shape) << t.name;
    SKRULL_CHECK((*again)->Data(*u) == file.Data(t)) << t.name << ": bytes differ";
  }
  for (const auto& [key, value] : file.metadata()) {
    auto it = (*again)->metadata().find(key);
    SKRULL_CHECK(it != (*again)->metadata().end() && it->second == value) << key;
  }
}

void TryBytes(std::string bytes) {
  const size_t size = bytes.size();
  StatusOr<std::unique_ptr<SafetensorsFile>> file =
      SafetensorsFile::FromBytes(std::move(bytes), "fuzz.safetensors");
  if (!file.ok()) {
    SKRULL_CHECK(file.status().code() == skrull::StatusCode::kInvalidArgument)
        << file.status().ToString();
    return;
  }
  CheckAcceptedFile(**file, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  TryBytes(bytes);
  if (size > 8) {
    const size_t last_brace = bytes.rfind('}');
    if (last_brace != std::string::npos && last_brace >= 8) {
      uint64_t header_bytes = last_brace + 1 - 8;
      for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header_bytes >> (8 * i)) & 0xff);
      TryBytes(std::move(bytes));
    }
  }
  return 0;
}
