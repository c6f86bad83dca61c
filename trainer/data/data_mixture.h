// DataMixture: the training data of a job as one index space over one or
// more sources (docs/job-spec.md, spec.data.path and spec.data.sources).
//
// A source is a path (file, directory or glob; data_files.h) with its format,
// field mapping and weight; each of its files is a Dataset. Global sample
// index g runs over source 0's files in sorted order, then source 1's, ... so
// the single-`path` job of one file indexes exactly as its Dataset does.
// .jsonl.gz files are read from a decompressed copy in `gz_cache_dir`.
//
// Open indexes every file and reports every problem at once (a glob matching
// nothing, a missing file, malformed lines with FILE:LINE), one per line.
// Thread safety: Get may be called concurrently; the rest is immutable.
#ifndef SKRULL_TRAINER_DATA_DATA_MIXTURE_H_
#define SKRULL_TRAINER_DATA_DATA_MIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/data/dataset.h"
#include "trainer/data/mixture_sampler.h"
#include "trainer/data/sample.h"

namespace skrull::data {

struct MixtureSource {
  std::string field;  // for messages: "spec.data.path" or "spec.data.sources[i].path"
  double weight = 1;  // > 0
  // Everything but the path is this source's; options.path is the pattern.
  DatasetOptions options;
};

// The sources of `spec` (its `sources`, or its `path` as one source of weight
// 1), each with `base`'s options (vocab size, length limit, policies,
// tokenizer) and its own path, format and fields.
std::vector<MixtureSource> MixtureSourcesFromSpec(const api::DataSpec& spec,
                                                  const DatasetOptions& base);

class DataMixture {
 public:
  // REQUIRES: sources non-empty.
  static StatusOr<std::unique_ptr<DataMixture>> Open(const std::vector<MixtureSource>& sources,
                                                     const std::string& gz_cache_dir);

  int64_t size() const { return total_; }  // samples over all sources
  // REQUIRES: 0 <= g < size() (as Dataset's accessors).
  int64_t Length(int64_t g) const;
  int64_t LabelTokenCount(int64_t g) const;
  std::string Location(int64_t g) const;  // "FILE:LINE"
  StatusOr<Sample> Get(int64_t g) const;
  int SourceOf(int64_t g) const;

  int num_sources() const { return static_cast<int>(sources_.size()); }
  int64_t source_size(int s) const { return sources_[s].size; }
  // A sampler over these sources with their weights (mixture_sampler.h).
  std::unique_ptr<MixtureSampler> MakeSampler(int64_t global_batch_size, uint64_t seed) const;
  // The global indices of a sampler's draws.
  std::vector<int64_t> GlobalIndices(const std::vector<MixtureDraw>& draws) const;
  // One line per source for logs: "source 0 (weight 3): PATH: <StatsSummary>".
  std::vector<std::string> Describe() const;

 private:
  struct File {
    int64_t first;  // global index of its sample 0
    std::unique_ptr<Dataset> dataset;
  };
  struct Source {
    std::string path;  // as written
    double weight;
    int64_t first;  // global index of its sample 0
    int64_t size;
  };
  const File& FileOf(int64_t g) const;

  std::vector<Source> sources_;
  std::vector<File> files_;
  int64_t total_ = 0;
};

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_DATA_MIXTURE_H_
