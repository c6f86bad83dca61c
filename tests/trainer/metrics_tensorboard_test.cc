// TensorBoard event files (tensorboard_events.h): the TFRecord framing and
// CRC32C against published values, and the files read back by TensorBoard's
// own reader (tests/trainer/read_tensorboard.py in the environment
// scripts/get-tensorboard.sh makes; skipped, saying why, without it).
#include "trainer/metrics/tensorboard_events.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/test_temp_dir.h"

namespace skrull::metrics {
namespace {

namespace fs = std::filesystem;

TEST(TensorBoardEvents, Crc32cMatchesPublishedCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);              // the CRC-32C check value
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8a9136aau);    // RFC 3720 B.4: 32 bytes of zeros
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62a8ab43u);  // RFC 3720 B.4: 32 bytes of 0xff
}

TEST(TensorBoardEvents, RecordFramesLengthDataAndTheirMaskedCrcs) {
  const std::string record = TfRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(record.substr(12, 3), "abc");
  const uint32_t crc = Crc32c("abc");
  const uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  uint32_t stored = 0;
  for (int i = 3; i >= 0; --i) stored = stored << 8 | static_cast<unsigned char>(record[15 + i]);
  EXPECT_EQ(stored, masked);
}

std::string RunCommand(const std::string& command) {
  std::array<char, 4096> buffer;
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return out;
  while (fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) out += buffer.data();
  return out;
}

TEST(TensorBoardEvents, TensorBoardsOwnReaderFindsEveryScalar) {
  const std::string venv = (std::getenv("SKRULL_CACHE") ? std::string(std::getenv("SKRULL_CACHE"))
                                                        : std::string("/var/cache/skrull")) +
                           "/tensorboard-2.21.0";
  if (!fs::exists(venv + "/.complete")) {
    GTEST_SKIP() << venv << " is absent: run scripts/get-tensorboard.sh to make it";
  }
  const std::string dir = testing_util::TestTempDir("tensorboard");
  auto writer = EventFileWriter::Create(dir, 1.7e9);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteScalars(1.7e9, 0, {{"train/loss", 4.25}, {"train/lr", 1e-3}}).ok());
  ASSERT_TRUE(
      (*writer)->WriteScalars(1.7e9 + 1, 1, {{"train/loss", 3.5}, {"eval/loss", 3.75}}).ok());
  // A NaN is left out: a gap, not a point.
  ASSERT_TRUE(
      (*writer)->WriteScalars(1.7e9 + 2, 2, {{"train/loss", 3.0}, {"eval/loss", NAN}}).ok());
  writer->reset();
  const char* source = std::getenv("SKRULL_SOURCE_DIR");  // set by CTest
  ASSERT_NE(source, nullptr) << "run under ctest, or set SKRULL_SOURCE_DIR";
  EXPECT_EQ(RunCommand(venv + "/bin/python " + source + "/tests/trainer/read_tensorboard.py " +
                       dir + " 2>&1"),
            "eval/loss 1 3.75\n"
            "train/loss 0 4.25\n"
            "train/loss 1 3.5\n"
            "train/loss 2 3.0\n"
            "train/lr 0 0.0010000000474974513\n");
}

}  // namespace
}  // namespace skrull::metrics
