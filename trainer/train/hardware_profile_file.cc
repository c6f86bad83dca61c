#include "trainer/train/hardware_profile_file.h"

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"

namespace skrull::train {

StatusOr<HardwareProfileFile> LoadHardwareProfileFile(const std::string& path) {
  const std::string where = "spec.scheduler.hardwareProfile: " + path + ": ";
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    const std::string fix =
        "; write it with `skrull-trainer --profile --job FILE --out " + path + "` or fix the path";
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFoundError(where + "no such file" + fix);
    }
    return Status(text.status().code(),
                  "spec.scheduler.hardwareProfile: " + text.status().message() + fix);
  }
  StatusOr<scheduler::HardwareProfile> hardware = scheduler::ParseHardwareProfileJson(*text, path);
  if (!hardware.ok()) {
    return InvalidArgumentError("spec.scheduler.hardwareProfile: " + hardware.status().message() +
                                "; expected a hardware-profile JSON as written by `skrull-trainer "
                                "--profile` or shipped in scheduler/profiles/");
  }
  HardwareProfileFile file;
  file.path = path;
  file.hardware = std::move(*hardware);
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  StatusOr<int64_t> bucket = JsonFields(j, "spec.scheduler.hardwareProfile: " + path)
                                 .OptionalInt("bucket_size_tokens", 0, /*min=*/1);
  if (!bucket.ok()) {
    return InvalidArgumentError(bucket.status().message() + "; re-run `skrull-trainer --profile`");
  }
  file.bucket_size_tokens = *bucket;
  return file;
}

}  // namespace skrull::train
