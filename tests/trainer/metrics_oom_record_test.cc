// The out-of-memory record's format (trainer/metrics/oom_record.h): file
// names per rank, every field, atomic writes into the output directory.
#include "trainer/metrics/oom_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace skrull::metrics {
namespace {

namespace fs = std::filesystem;

OomRecord TestRecord() {
  OomRecord r;
  r.rank = 3;
  r.step = 7;
  r.device = "cuda:3";
  r.bucket_size_tokens = 16384;
  r.rank_tokens_planned = 16120;
  r.memory_peak_bytes = 79456894976;
  r.memory_peak_allocated_bytes = 76235669504;
  r.memory_capacity_bytes = 85520809984;
  r.message = "CUDA out of memory. Tried to allocate 2.00 GiB";
  return r;
}

TEST(OomRecord, FileNamesFollowTheMetricsFilesPerRank) {
  EXPECT_EQ(OomRecordFileName(0), "oom.json");
  EXPECT_EQ(OomRecordFileName(1), "oom-rank1.json");
  EXPECT_EQ(OomRecordFileName(12), "oom-rank12.json");
}

TEST(OomRecord, CarriesEveryFieldWithTheSchema) {
  const OomRecord r = TestRecord();
  const nlohmann::json j = nlohmann::json::parse(FormatOomRecord(r));
  EXPECT_EQ(j["schema"], kOomRecordSchema);
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["step"], 7);
  EXPECT_EQ(j["device"], "cuda:3");
  EXPECT_EQ(j["bucket_size_tokens"], 16384);
  EXPECT_EQ(j["rank_tokens_planned"], 16120);
  EXPECT_EQ(j["memory_peak_bytes"].get<uint64_t>(), r.memory_peak_bytes);
  EXPECT_EQ(j["memory_peak_allocated_bytes"].get<uint64_t>(), r.memory_peak_allocated_bytes);
  EXPECT_EQ(j["memory_capacity_bytes"].get<uint64_t>(), r.memory_capacity_bytes);
  EXPECT_EQ(j["message"], r.message);
  EXPECT_EQ(j.size(), 10u) << j.dump();
}

TEST(OomRecord, WritesTheRanksFileIntoTheOutputDirectory) {
  const fs::path dir =
      fs::temp_directory_path() / ("skrull_oom_record_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  StatusOr<std::string> path = WriteOomRecord(dir.string(), TestRecord());
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, (dir / "oom-rank3.json").string());
  EXPECT_EQ(*ReadFileToString(*path), FormatOomRecord(TestRecord()));
  EXPECT_FALSE(WriteOomRecord((dir / "oom-rank3.json" / "x").string(), TestRecord()).ok())
      << "a path under a file cannot be written";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace skrull::metrics
