// Several data sources mixed by weight: path expansion (file, directory,
// glob, .jsonl.gz), the mixture's index space, and MixtureSampler's
// determinism, proportions and resumable state.
#include "trainer/data/data_mixture.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>

#include "tests/trainer/data_test_util.h"
#include "trainer/data/data_files.h"
#include "trainer/data/mixture_sampler.h"

namespace skrull::data {
namespace {

std::string Lines(int n, int first_id) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += "{\"input_ids\": [" + std::to_string(first_id + i) + ", 1, 2]}\n";
  }
  return out;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
}

TEST(MixtureSampler, OneSourceSamplesExactlyAsTheSampler) {
  MixtureSampler mixture({37}, {1.0}, 8, 5);
  Sampler plain(37, 8, 5);
  for (int64_t step = 0; step < 12; ++step) {
    std::vector<int64_t> got;
    for (const MixtureDraw& d : mixture.GlobalBatch(step)) got.push_back(d.index);
    EXPECT_EQ(got, plain.GlobalBatch(step)) << "step " << step;
  }
}

TEST(MixtureSampler, SharesFollowTheWeightsAndEachSourceCyclesItsEpochs) {
  MixtureSampler mixture({10, 1000}, {3.0, 1.0}, 64, 1);
  std::vector<int64_t> count(2, 0);
  std::vector<int64_t> seen_small(10, 0);
  for (int64_t step = 0; step < 100; ++step) {
    for (const MixtureDraw& d : mixture.GlobalBatch(step)) {
      ++count[d.source];
      if (d.source == 0) ++seen_small[d.index];
    }
  }
  const double share = static_cast<double>(count[0]) / (count[0] + count[1]);
  EXPECT_NEAR(share, 0.75, 0.01);  // 6400 draws: 3 standard deviations ~ 0.016
  EXPECT_EQ(mixture.state().cursors[0], count[0]);
  // Source 0 went through whole epochs: every sample within one of the rest.
  const auto [lo, hi] = std::minmax_element(seen_small.begin(), seen_small.end());
  EXPECT_LE(*hi - *lo, 1);
}

TEST(MixtureSampler, RestoredStateAndReplayGiveTheSameBatches) {
  MixtureSampler straight({50, 7, 20}, {1.0, 0.5, 2.0}, 6, 9);
  for (int64_t step = 0; step < 5; ++step) straight.GlobalBatch(step);
  const MixtureState saved = straight.state();
  MixtureSampler restored({50, 7, 20}, {1.0, 0.5, 2.0}, 6, 9);
  ASSERT_TRUE(restored.Restore(saved).ok());
  MixtureSampler replayed({50, 7, 20}, {1.0, 0.5, 2.0}, 6, 9);
  for (int64_t step = 5; step < 9; ++step) {
    const std::vector<MixtureDraw> want = straight.GlobalBatch(step);
    for (MixtureSampler* other : {&restored, &replayed}) {
      const std::vector<MixtureDraw> got = other->GlobalBatch(step);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].source, want[k].source);
        EXPECT_EQ(got[k].index, want[k].index);
      }
    }
  }
  MixtureState wrong = saved;
  wrong.cursors.pop_back();
  Status refused = restored.Restore(wrong);
  EXPECT_FALSE(refused.ok());
  EXPECT_HAS(refused.message(), "does not fit this job's 3 spec.data.sources");
}

TEST(DataFiles, DirectoryAndGlobGiveSortedDataFilesAndEmptyOnesNameTheField) {
  const std::string dir = TempDir();
  WriteFile(dir + "/d/b.jsonl", Lines(1, 3));
  WriteFile(dir + "/d/a.jsonl", Lines(1, 3));
  WriteFile(dir + "/d/notes.txt", "x");
  auto listed = ExpandDataPath(dir + "/d", "spec.data.sources[0].path");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(*listed, (std::vector<std::string>{dir + "/d/a.jsonl", dir + "/d/b.jsonl"}));
  auto globbed = ExpandDataPath(dir + "/d/b*", "f");
  ASSERT_TRUE(globbed.ok());
  EXPECT_EQ(*globbed, std::vector<std::string>{dir + "/d/b.jsonl"});
  auto none = ExpandDataPath(dir + "/d/*.parquet", "spec.data.sources[1].path");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "spec.data.sources[1].path: the glob '" + dir +
                                         "/d/*.parquet' matches no .jsonl or .jsonl.gz file; "
                                         "check the folder and the pattern (e.g. data/*.jsonl)");
  std::filesystem::create_directories(dir + "/empty");
  EXPECT_HAS(ExpandDataPath(dir + "/empty", "spec.data.path").status().message(),
             "spec.data.path: the directory '" + dir + "/empty' holds no .jsonl");
}

TEST(DataMixture, IndexesSourcesInOrderReadsGzipAndReportsEveryProblem) {
  const std::string dir = TempDir();
  WriteFile(dir + "/a/1.jsonl", Lines(3, 10));
  WriteFile(dir + "/a/2.jsonl", Lines(2, 20));
  WriteGzip(dir + "/b.jsonl.gz", Lines(4, 30));
  api::DataSpec spec;
  spec.sources = {{dir + "/a", api::DataFormat::kTokenizedJsonl, 2.0, {}},
                  {dir + "/b.jsonl.gz", api::DataFormat::kTokenizedJsonl, 1.0, {}}};
  auto m = DataMixture::Open(MixtureSourcesFromSpec(spec, DatasetOptions()), dir + "/cache");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->size(), 9);
  EXPECT_EQ((*m)->source_size(0), 5);
  EXPECT_EQ((*m)->SourceOf(4), 0);
  EXPECT_EQ((*m)->SourceOf(5), 1);
  EXPECT_EQ((*m)->Get(3)->input_ids[0], 20);  // 2.jsonl's first line
  EXPECT_EQ((*m)->Get(8)->input_ids[0], 33);  // from the decompressed copy
  EXPECT_EQ((*m)->Location(1), dir + "/a/1.jsonl:2");
  EXPECT_EQ((*m)->GlobalIndices({{1, 2}, {0, 4}}), (std::vector<int64_t>{7, 4}));

  WriteFile(dir + "/bad.jsonl", Lines(1, 3) + "{\"input_ids\": \"x\"}\n");
  spec.sources = {{dir + "/nothing/*.jsonl", api::DataFormat::kTokenizedJsonl, 1.0, {}},
                  {dir + "/bad.jsonl", api::DataFormat::kTokenizedJsonl, 1.0, {}},
                  {dir + "/missing.jsonl", api::DataFormat::kTokenizedJsonl, 1.0, {}}};
  auto bad = DataMixture::Open(MixtureSourcesFromSpec(spec, DatasetOptions()), dir + "/cache");
  ASSERT_FALSE(bad.ok());
  EXPECT_HAS(bad.status().message(), "3 data problems:\nspec.data.sources[0].path: the glob");
  EXPECT_HAS(bad.status().message(), dir + "/bad.jsonl:2:");
  EXPECT_HAS(bad.status().message(), dir + "/missing.jsonl: no such file");
}

}  // namespace
}  // namespace skrull::data
