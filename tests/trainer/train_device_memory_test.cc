// Device memory in the training loop (trainer/train/device_memory.h): what a
// memory source reports reaches metrics.jsonl and the summary, and an
// out-of-memory error ends the run with OutOfMemory and the out-of-memory
// record (trainer/metrics/oom_record.h) instead of a generic failure. On CPU:
// a fake source stands in for the CUDA caching allocator, and the test hook
// throws the allocator's c10::OutOfMemoryError.
#include "trainer/train/device_memory.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/metrics/oom_record.h"
#include "trainer/train/trainer.h"

namespace skrull::train {
namespace {

using nlohmann::json;
using testing::JobFiles;
using testing::TempDir;
using testing::WriteJob;

constexpr uint64_t kGiB = 1ull << 30;

// A caching allocator's view: step k peaks at k+1 GiB allocated and 2(k+1)
// GiB reserved, on an 80 GiB device.
class FakeAllocator : public DeviceMemory {
 public:
  MemoryPeak TakePeak() override {
    ++calls_;
    return {calls_ * kGiB, 2 * calls_ * kGiB};
  }
  uint64_t CapacityBytes() override { return 80 * kGiB; }

 private:
  uint64_t calls_ = 0;
};

std::vector<json> MetricsLines(const std::string& path) {
  std::vector<json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

TEST(DeviceMemory, HostMemoryReportsThePeakRssAndHostCapacity) {
  std::unique_ptr<DeviceMemory> m = MakeDeviceMemory(c10::Device(c10::kCPU));
  const MemoryPeak peak = m->TakePeak();
  EXPECT_GT(peak.reserved_bytes, 0u);
  EXPECT_EQ(peak.allocated_bytes, peak.reserved_bytes) << "one figure on CPU";
  EXPECT_GT(m->CapacityBytes(), peak.reserved_bytes);
}

TEST(DeviceMemory, TheInjectedErrorIsTheAllocatorsOutOfMemoryError) {
  try {
    ThrowInjectedOutOfMemory(4);
    FAIL() << "did not throw";
  } catch (const c10::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("CUDA out of memory"),
              std::string::npos);
  }
}

TEST(TrainerMemory, StepsAndSummaryCarryTheSourcesPeaksAndCapacity) {
  TempDir dir;
  JobFiles f;
  f.steps = 3;
  TrainerOptions o;
  o.device_memory = [](c10::Device) { return std::make_unique<FakeAllocator>(); };
  testing::TrainResult r = testing::TrainInProcess(testing::LoadJob(WriteJob(dir, f)), 0, o);
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  const std::vector<json> lines = MetricsLines(dir / "out/metrics.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  for (uint64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(lines[k]["memory_peak_allocated_bytes"].get<uint64_t>(), (k + 1) * kGiB);
    EXPECT_EQ(lines[k]["memory_peak_bytes"].get<uint64_t>(), 2 * (k + 1) * kGiB) << "reserved";
    EXPECT_EQ(lines[k]["memory_capacity_bytes"].get<uint64_t>(), 80 * kGiB);
  }
  // The summary takes the run's largest peaks (the end of the run is a 4th sample).
  EXPECT_EQ(r.summary.peak_memory_allocated_bytes, 4 * kGiB);
  EXPECT_EQ(r.summary.peak_memory_bytes, 8 * kGiB);
  const json summary = json::parse(*ReadFileToString(dir / "out/summary.json"));
  EXPECT_EQ(summary["peak_memory_bytes"].get<uint64_t>(), 8 * kGiB);
  EXPECT_EQ(summary["peak_memory_allocated_bytes"].get<uint64_t>(), 4 * kGiB);
}

// A device whose free memory shrinks once the first step ran (the CUDA
// context, cuBLAS workspaces and NCCL buffers sit outside the allocator).
class ShrinkingCapacity : public FakeAllocator {
 public:
  uint64_t CapacityBytes() override { return reads_++ == 0 ? 80 * kGiB : 76 * kGiB; }

 private:
  int reads_ = 0;
};

// Guards the capacity the tuner's headroom is computed from: read again after
// the first (warm-up) step, not only before any work ran.
TEST(TrainerMemory, CapacityIsReadAgainAfterTheFirstStep) {
  TempDir dir;
  JobFiles f;
  f.steps = 3;
  TrainerOptions o;
  o.device_memory = [](c10::Device) { return std::make_unique<ShrinkingCapacity>(); };
  testing::TrainResult r = testing::TrainInProcess(testing::LoadJob(WriteJob(dir, f)), 0, o);
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  const std::vector<json> lines = MetricsLines(dir / "out/metrics.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  for (const json& line : lines) {
    EXPECT_EQ(line["memory_capacity_bytes"].get<uint64_t>(), 76 * kGiB) << line;
  }
}

TEST(TrainerMemory, OutOfMemoryAtAStepReturnsOutOfMemoryAndWritesTheRecord) {
  TempDir dir;
  JobFiles f;
  f.steps = 4;
  TrainerOptions o;
  o.out_of_memory_at_step = 2;
  o.device_memory = [](c10::Device) { return std::make_unique<FakeAllocator>(); };
  const api::JobSpec job = testing::LoadJob(WriteJob(dir, f));
  testing::TrainResult r = testing::TrainInProcess(job, 0, o);
  ASSERT_EQ(r.status.code(), StatusCode::kOutOfMemory) << r.status;
  const std::string record_path = dir / "out/oom.json";
  EXPECT_NE(r.status.message().find("rank 0, step 2, cpu: out of memory: CUDA out of memory."),
            std::string::npos)
      << r.status;
  EXPECT_NE(r.status.message().find("wrote " + record_path), std::string::npos) << r.status;
  EXPECT_EQ(MetricsLines(dir / "out/metrics.jsonl").size(), 2u) << "steps 0 and 1 ran";

  const json rec = json::parse(*ReadFileToString(record_path));
  EXPECT_EQ(rec["schema"], metrics::kOomRecordSchema);
  EXPECT_EQ(rec["rank"], 0);
  EXPECT_EQ(rec["step"], 2);
  EXPECT_EQ(rec["device"], "cpu");
  EXPECT_EQ(rec["bucket_size_tokens"], 256);
  EXPECT_GT(rec["rank_tokens_planned"].get<int64_t>(), 0);
  EXPECT_LE(rec["rank_tokens_planned"].get<int64_t>(), 256);
  EXPECT_EQ(rec["memory_peak_allocated_bytes"].get<uint64_t>(), 3 * kGiB) << "its step's peak";
  EXPECT_EQ(rec["memory_peak_bytes"].get<uint64_t>(), 6 * kGiB);
  EXPECT_EQ(rec["memory_capacity_bytes"].get<uint64_t>(), 80 * kGiB);
  EXPECT_NE(rec["message"].get<std::string>().find("injected at step 2"), std::string::npos);

  // The next run in the directory is not the one that ran out.
  o.out_of_memory_at_step = -1;
  testing::TrainResult again = testing::TrainInProcess(job, 0, o);
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_FALSE(std::filesystem::exists(record_path));
}

// Trains a job in `dir` whose memory source throws c10::Error(`what`) while
// setting up.
testing::TrainResult TrainThrowingInSetup(const TempDir& dir, const std::string& what) {
  TrainerOptions o;
  o.device_memory = [what](c10::Device) -> std::unique_ptr<DeviceMemory> {
    C10_THROW_ERROR(Error, what);
  };
  return testing::TrainInProcess(testing::LoadJob(WriteJob(dir, JobFiles{})), 0, o);
}

// A failed cudaMalloc outside the caching allocator (C10_CUDA_CHECK's error),
// here while setting up: the record says step -1.
TEST(TrainerMemory, ACudaRuntimeOutOfMemoryWhileSettingUpIsAnOutOfMemoryToo) {
  TempDir dir;
  testing::TrainResult r = TrainThrowingInSetup(
      dir, "CUDA error: out of memory\nCUDA kernel errors might be reported later");
  EXPECT_EQ(r.status.code(), StatusCode::kOutOfMemory) << r.status;
  EXPECT_NE(r.status.message().find("rank 0, setting up, cpu: out of memory: CUDA error: out of "
                                    "memory; wrote"),
            std::string::npos)
      << r.status;
  const json rec = json::parse(*ReadFileToString(dir / "out/oom.json"));
  EXPECT_EQ(rec["step"], -1);
  EXPECT_EQ(rec["message"], "CUDA error: out of memory") << "the first line";
  EXPECT_EQ(rec["memory_peak_bytes"], 0) << "no memory source yet";
}

TEST(TrainerMemory, OtherLibtorchErrorsStayInternal) {
  TempDir dir;
  testing::TrainResult r = TrainThrowingInSetup(dir, "not a memory problem");
  EXPECT_EQ(r.status.code(), StatusCode::kInternal) << r.status;
  EXPECT_FALSE(std::filesystem::exists(dir / "out/oom.json"));
}

}  // namespace
}  // namespace skrull::train
