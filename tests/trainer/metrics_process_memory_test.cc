// Host memory readers for CPU runs: procfs parsing on fixtures, and the real
// /proc/self/status.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "common/file_util.h"
#include "trainer/metrics/process_memory.h"

namespace skrull::metrics {
namespace {

constexpr char kStatus[] =
    "Name:\tskrull-trainer\n"
    "VmPeak:\t 2345678 kB\n"
    "VmHWM:\t   81920 kB\n"
    "VmRSS:\t   40960 kB\n";

TEST(ProcessMemory, ParsesKilobyteFieldsAsBytes) {
  EXPECT_EQ(*ParseProcKilobytesField(kStatus, "VmHWM"), 81920ull * 1024);
  EXPECT_EQ(*ParseProcKilobytesField(kStatus, "VmRSS"), 40960ull * 1024);
  EXPECT_EQ(*ParseProcKilobytesField("MemTotal:       131072 kB", "MemTotal"), 131072ull * 1024)
      << "last line without a newline";
}

TEST(ProcessMemory, MissingFieldIsNotFoundAndJunkIsInvalid) {
  EXPECT_EQ(ParseProcKilobytesField(kStatus, "VmSwap").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseProcKilobytesField(kStatus, "VmHW").status().code(), StatusCode::kNotFound)
      << "a prefix of a field name is not the field";
  Status junk = ParseProcKilobytesField("VmHWM:\t12 MB\n", "VmHWM").status();
  EXPECT_EQ(junk.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(junk.message(), "VmHWM: expected \"<n> kB\", got \"12 MB\"");
  EXPECT_EQ(ParseProcKilobytesField("VmHWM: 99999999999999999999999 kB", "VmHWM").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ProcessMemory, PeakRssOfThisProcessCoversWhatItTouched) {
  StatusOr<uint64_t> peak_before = ReadProcessPeakRssBytes();
  ASSERT_TRUE(peak_before.ok()) << peak_before.status();
  EXPECT_GT(*peak_before, 1u << 20);
  StatusOr<std::string> status = ReadFileToString("/proc/self/status");
  ASSERT_TRUE(status.ok());
  StatusOr<uint64_t> rss_before = ParseProcKilobytesField(*status, "VmRSS");
  ASSERT_TRUE(rss_before.ok());
  constexpr size_t kBytes = 64u << 20;
  auto block = std::make_unique<char[]>(kBytes);
  for (size_t i = 0; i < kBytes; i += 4096) block[i] = static_cast<char>(i);
  asm volatile("" : : "r"(block.get()) : "memory");  // the stores happen
  StatusOr<uint64_t> after = ReadProcessPeakRssBytes();
  ASSERT_TRUE(after.ok());
  EXPECT_GE(*after, *rss_before + kBytes * 9 / 10) << "VmHWM covers the touched 64 MiB";
  EXPECT_GE(*after, *peak_before) << "a high-water mark never drops";
}

TEST(ProcessMemory, MissingStatusFileNamesIt) {
  Status s = ReadProcessPeakRssBytes("/nonexistent/status").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/nonexistent/status"), std::string::npos) << s;
}

TEST(ProcessMemory, CapacityIsMemTotalLoweredToTheCgroupLimit) {
  std::string dir = (std::filesystem::temp_directory_path() / "skrull-meminfo-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string meminfo = dir + "/meminfo";
  const std::string cgroup = dir + "/memory.max";
  ASSERT_TRUE(WriteFileAtomically(meminfo, "MemTotal:       8388608 kB\nMemFree: 1 kB\n").ok());

  EXPECT_EQ(*ReadHostMemoryCapacityBytes(meminfo, cgroup), 8ull << 30) << "no cgroup file";
  ASSERT_TRUE(WriteFileAtomically(cgroup, "max\n").ok());
  EXPECT_EQ(*ReadHostMemoryCapacityBytes(meminfo, cgroup), 8ull << 30) << "unlimited";
  ASSERT_TRUE(WriteFileAtomically(cgroup, "2147483648\n").ok());
  EXPECT_EQ(*ReadHostMemoryCapacityBytes(meminfo, cgroup), 2ull << 30) << "limited";
  ASSERT_TRUE(WriteFileAtomically(cgroup, "68719476736\n").ok());
  EXPECT_EQ(*ReadHostMemoryCapacityBytes(meminfo, cgroup), 8ull << 30) << "limit above RAM";
  EXPECT_TRUE(ReadHostMemoryCapacityBytes().ok()) << "the real files";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace skrull::metrics
