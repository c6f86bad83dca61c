// TensorBoard event files: scalars written as TensorFlow `Event` records in
// the TFRecord format, so `tensorboard --logdir runs/` shows a run's curves
// without Python at run time (docs/metrics.md, TensorBoard).
//
// TFRecord (tensorflow/core/lib/io/record_writer.cc): per record
//   uint64 length (little-endian), uint32 masked CRC32C of those 8 bytes,
//   the data, uint32 masked CRC32C of the data;
//   masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8.
// Event (tensorflow/core/util/event.proto): wall_time = 1 (double), step = 2
// (int64), file_version = 3 (string, "brain.Event:2" in the first record),
// summary = 5 (Summary); Summary (tensorflow/core/framework/summary.proto):
// repeated Value value = 1; Value: tag = 1 (string), simple_value = 2 (float).
// That is all a scalar needs, so the protobuf wire format is written by hand
// (varints, fixed 32/64-bit fields, length-delimited fields: about 40 lines)
// rather than generating code from TensorFlow's .proto files with Debian's
// protoc, which would vendor those files and add a build step for five
// fields. TensorBoard's own reader (tensorboard.backend.event_processing)
// reads these files back in tests/trainer/metrics_tensorboard_test.cc.
//
// Thread safety: a writer is used by one thread.
#ifndef SKRULL_TRAINER_METRICS_TENSORBOARD_EVENTS_H_
#define SKRULL_TRAINER_METRICS_TENSORBOARD_EVENTS_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace skrull::metrics {

// CRC32C (Castagnoli, reflected polynomial 0x82f63b78) of `data`, and the
// TFRecord mask of a CRC.
uint32_t Crc32c(std::string_view data);
uint32_t MaskedCrc32c(std::string_view data);

// One TFRecord frame around `data`.
std::string TfRecord(std::string_view data);

// The serialized Event of a file's first record (file_version "brain.Event:2").
std::string FileVersionEvent(double wall_time);
// The serialized Event carrying `scalars` (tag, value) at `step`.
std::string ScalarsEvent(double wall_time, int64_t step,
                         const std::vector<std::pair<std::string, double>>& scalars);

class EventFileWriter {
 public:
  // Creates <dir>/events.out.tfevents.<10-digit seconds>.<host>.<pid> (dir
  // created if missing) and writes the file_version record. IoError naming
  // the file when it cannot be written.
  static StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& dir,
                                                           double wall_time);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Appends one Event with `scalars` at `step` and flushes it, so a
  // TensorBoard reading the file sees every finished step. Non-finite
  // values are left out (a curve gets a gap, not a NaN point).
  Status WriteScalars(double wall_time, int64_t step,
                      const std::vector<std::pair<std::string, double>>& scalars);

  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  Status Append(const std::string& event);

  std::string path_;
  std::FILE* file_;
};

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_TENSORBOARD_EVENTS_H_
