// Test support: the tensors of a run's newest checkpoint, for tests that
// compare the weights two runs ended with.
#ifndef SKRULL_TESTS_TRAINER_CHECKPOINT_TEST_UTIL_H_
#define SKRULL_TESTS_TRAINER_CHECKPOINT_TEST_UTIL_H_

#include <map>
#include <optional>
#include <string>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/model/safetensors.h"
#include "trainer/train/checkpoint.h"

namespace skrull::train::testing {

struct CheckpointTensor {
  model::DType dtype;
  std::string data;  // raw little-endian bytes
  bool operator==(const CheckpointTensor& o) const { return dtype == o.dtype && data == o.data; }
};

// Tensor name -> tensor of <output_dir>'s latest complete checkpoint's
// model.safetensors. NotFound when the run left no checkpoint.
inline StatusOr<std::map<std::string, CheckpointTensor>> LatestCheckpointTensors(
    const std::string& output_dir) {
  SKRULL_ASSIGN_OR_RETURN(std::optional<std::string> dir,
                          ResolveResumeDir(output_dir, api::kResumeLatest));
  if (!dir) return NotFoundError(output_dir + ": no complete checkpoint");
  SKRULL_ASSIGN_OR_RETURN(auto file, model::SafetensorsFile::Open(*dir + "/model.safetensors"));
  std::map<std::string, CheckpointTensor> tensors;
  for (const model::TensorInfo& info : file->tensors()) {
    tensors[info.name] = {info.dtype, std::string(file->Data(info))};
  }
  return tensors;
}

}  // namespace skrull::train::testing

#endif  // SKRULL_TESTS_TRAINER_CHECKPOINT_TEST_UTIL_H_
