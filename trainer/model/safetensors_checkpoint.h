// A set of safetensors files that together hold one model's tensors: a
// single file, or a Hugging Face folder with model.safetensors.index.json
// (sharded) or model.safetensors. Torch-free.
//
// Thread safety: immutable after Open; safe to read from many threads.
#ifndef SKRULL_TRAINER_MODEL_SAFETENSORS_CHECKPOINT_H_
#define SKRULL_TRAINER_MODEL_SAFETENSORS_CHECKPOINT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/model/safetensors.h"

namespace skrull::model {

inline constexpr char kSafetensorsIndexFile[] = "model.safetensors.index.json";
inline constexpr char kSafetensorsSingleFile[] = "model.safetensors";

class SafetensorsCheckpoint {
 public:
  // `path` is a .safetensors file or a folder. A folder uses its
  // model.safetensors.index.json when present (every shard it names is
  // opened and validated; a tensor the index places in a shard that lacks it,
  // a shard tensor the index does not list, or a tensor in two shards is an
  // InvalidArgument naming both files), else its model.safetensors.
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& path);

  struct Entry {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };
  // nullptr when absent.
  const Entry* Find(const std::string& name) const;
  // Every tensor name, sorted.
  std::vector<std::string> Names() const;
  // What was opened (the file, or the folder) for error messages.
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry> entries_;
};

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_SAFETENSORS_CHECKPOINT_H_
