#include "trainer/metrics/tensorboard_events.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

namespace skrull::metrics {
namespace {

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    table[i] = c;
  }
  return table;
}

void PutFixed(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Protobuf wire format: a field key is (number << 3) | wire type.
void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutKey(std::string* out, int field, int wire_type) {
  PutVarint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}
void PutDouble(std::string* out, int field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  PutKey(out, field, 1);
  PutFixed(out, bits, 8);
}
void PutFloat(std::string* out, int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  PutKey(out, field, 5);
  PutFixed(out, bits, 4);
}
void PutBytes(std::string* out, int field, std::string_view bytes) {
  PutKey(out, field, 2);
  PutVarint(out, bytes.size());
  out->append(bytes);
}
void PutInt64(std::string* out, int field, int64_t v) {
  PutKey(out, field, 0);
  PutVarint(out, static_cast<uint64_t>(v));
}

std::string EventHeader(double wall_time, int64_t step) {
  std::string event;
  PutDouble(&event, 1, wall_time);  // Event.wall_time
  PutInt64(&event, 2, step);        // Event.step
  return event;
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();
  uint32_t c = 0xffffffffu;
  for (unsigned char b : data) c = kTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string TfRecord(std::string_view data) {
  std::string length;
  PutFixed(&length, data.size(), 8);
  std::string out = length;
  PutFixed(&out, MaskedCrc32c(length), 4);
  out.append(data);
  PutFixed(&out, MaskedCrc32c(data), 4);
  return out;
}

std::string FileVersionEvent(double wall_time) {
  std::string event = EventHeader(wall_time, 0);
  PutBytes(&event, 3, "brain.Event:2");  // Event.file_version
  return event;
}

std::string ScalarsEvent(double wall_time, int64_t step,
                         const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    PutBytes(&v, 1, tag);                        // Summary.Value.tag
    PutFloat(&v, 2, static_cast<float>(value));  // Summary.Value.simple_value
    PutBytes(&summary, 1, v);                    // Summary.value
  }
  std::string event = EventHeader(wall_time, step);
  PutBytes(&event, 5, summary);  // Event.summary
  return event;
}

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir,
                                                                   double wall_time) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create the TensorBoard folder: " + ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  char name[400];
  std::snprintf(name, sizeof(name), "events.out.tfevents.%010lld.%s.%d",
                static_cast<long long>(wall_time), host, static_cast<int>(::getpid()));
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::FILE* file = std::fopen(path.c_str(), "ab");
  if (file == nullptr) return IoError(path + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(path, file));
  SKRULL_RETURN_IF_ERROR(writer->Append(FileVersionEvent(wall_time)));
  return writer;
}

EventFileWriter::~EventFileWriter() { std::fclose(file_); }

Status EventFileWriter::Append(const std::string& event) {
  const std::string record = TfRecord(event);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    return IoError(path_ + ": write failed: " + std::strerror(errno));
  }
  return OkStatus();
}

Status EventFileWriter::WriteScalars(double wall_time, int64_t step,
                                     const std::vector<std::pair<std::string, double>>& scalars) {
  std::vector<std::pair<std::string, double>> finite;
  for (const auto& s : scalars) {
    if (std::isfinite(s.second)) finite.push_back(s);
  }
  if (finite.empty()) return OkStatus();
  return Append(ScalarsEvent(wall_time, step, finite));
}

}  // namespace skrull::metrics
