// A hardware-profile file as the trainer reads it (spec.scheduler.hardwareProfile):
// the scheduler's HardwareProfile plus, from files written by
// `skrull-trainer --profile` (trainer/dist/profile.h), the measured
// BucketSize. Torch-free.
#ifndef SKRULL_TRAINER_TRAIN_HARDWARE_PROFILE_FILE_H_
#define SKRULL_TRAINER_TRAIN_HARDWARE_PROFILE_FILE_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "scheduler/hardware_profile.h"

namespace skrull::train {

struct HardwareProfileFile {
  std::string path;
  scheduler::HardwareProfile hardware;
  int64_t bucket_size_tokens = 0;  // top-level "bucket_size_tokens"; 0 when absent
};

// Reads `path` and parses it with scheduler::ParseHardwareProfileJson.
// Errors start with "spec.scheduler.hardwareProfile: <path>: " and say how
// to fix it: NotFound when the file is missing, IoError when it cannot be
// read, InvalidArgument when the scheduler cannot parse it or
// "bucket_size_tokens" is present but not a positive integer.
StatusOr<HardwareProfileFile> LoadHardwareProfileFile(const std::string& path);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_HARDWARE_PROFILE_FILE_H_
