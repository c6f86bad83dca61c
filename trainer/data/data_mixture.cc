#include "trainer/data/data_mixture.h"

#include <algorithm>
#include <cstdio>

#include "trainer/data/data_files.h"

namespace skrull::data {

std::vector<MixtureSource> MixtureSourcesFromSpec(const api::DataSpec& spec,
                                                  const DatasetOptions& base) {
  std::vector<MixtureSource> out;
  if (spec.sources.empty()) {
    out.push_back({"spec.data.path", 1.0, base});
    return out;
  }
  for (size_t i = 0; i < spec.sources.size(); ++i) {
    const api::DataSourceSpec& s = spec.sources[i];
    MixtureSource m{"spec.data.sources[" + std::to_string(i) + "].path", s.weight, base};
    m.options.path = s.path;
    m.options.format = s.format;
    m.options.fields = s.fields;
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<std::unique_ptr<DataMixture>> DataMixture::Open(const std::vector<MixtureSource>& sources,
                                                         const std::string& gz_cache_dir) {
  SKRULL_CHECK(!sources.empty());
  std::unique_ptr<DataMixture> m(new DataMixture());
  std::vector<std::string> problems;
  for (const MixtureSource& source : sources) {
    StatusOr<std::vector<std::string>> files = ExpandDataPath(source.options.path, source.field);
    if (!files.ok()) {
      problems.push_back(files.status().message());
      continue;
    }
    Source s{source.options.path, source.weight, m->total_, 0};
    for (const std::string& file : *files) {
      DatasetOptions o = source.options;
      o.path = file;
      if (IsGzip(file)) {
        StatusOr<std::string> copy = DecompressedCopy(file, gz_cache_dir);
        if (!copy.ok()) {
          problems.push_back(copy.status().message());
          continue;
        }
        o.path = *copy;
      }
      StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(o);
      if (!ds.ok()) {
        problems.push_back(ds.status().message());
        continue;
      }
      m->files_.push_back({m->total_, std::move(ds).value()});
      m->total_ += m->files_.back().dataset->size();
      s.size += m->files_.back().dataset->size();
    }
    m->sources_.push_back(s);
  }
  if (!problems.empty()) {
    std::string msg =
        std::to_string(problems.size()) + " data problem" + (problems.size() == 1 ? "" : "s") + ":";
    for (const std::string& p : problems) msg += "\n" + p;
    return InvalidArgumentError(msg);
  }
  return m;
}

const DataMixture::File& DataMixture::FileOf(int64_t g) const {
  SKRULL_CHECK(g >= 0 && g < total_) << "sample " << g << " of " << total_;
  auto it = std::upper_bound(files_.begin(), files_.end(), g,
                             [](int64_t v, const File& f) { return v < f.first; });
  return *(it - 1);
}

int64_t DataMixture::Length(int64_t g) const {
  const File& f = FileOf(g);
  return f.dataset->Length(g - f.first);
}

int64_t DataMixture::LabelTokenCount(int64_t g) const {
  const File& f = FileOf(g);
  return f.dataset->LabelTokenCount(g - f.first);
}

std::string DataMixture::Location(int64_t g) const {
  const File& f = FileOf(g);
  return f.dataset->Location(g - f.first);
}

StatusOr<Sample> DataMixture::Get(int64_t g) const {
  const File& f = FileOf(g);
  return f.dataset->Get(g - f.first);
}

int DataMixture::SourceOf(int64_t g) const {
  SKRULL_CHECK(g >= 0 && g < total_) << "sample " << g << " of " << total_;
  int s = 0;
  while (s + 1 < num_sources() && g >= sources_[s + 1].first) ++s;
  return s;
}

std::unique_ptr<MixtureSampler> DataMixture::MakeSampler(int64_t global_batch_size,
                                                         uint64_t seed) const {
  std::vector<int64_t> sizes;
  std::vector<double> weights;
  for (const Source& s : sources_) {
    sizes.push_back(s.size);
    weights.push_back(s.weight);
  }
  return std::make_unique<MixtureSampler>(sizes, weights, global_batch_size, seed);
}

std::vector<int64_t> DataMixture::GlobalIndices(const std::vector<MixtureDraw>& draws) const {
  std::vector<int64_t> out;
  out.reserve(draws.size());
  for (const MixtureDraw& d : draws) out.push_back(sources_[d.source].first + d.index);
  return out;
}

std::vector<std::string> DataMixture::Describe() const {
  std::vector<std::string> lines;
  for (const File& f : files_) {
    const int s = SourceOf(f.first);
    char weight[32];
    std::snprintf(weight, sizeof(weight), "%g", sources_[s].weight);
    lines.push_back("source " + std::to_string(s) + " (weight " + weight +
                    "): " + f.dataset->options().path + ": " + StatsSummary(f.dataset->stats()));
  }
  return lines;
}

}  // namespace skrull::data
