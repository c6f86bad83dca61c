// The torch-free safetensors reader/writer: round trips, validation errors,
// sharded folders, float conversions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/model/safetensors.h"
#include "trainer/model/safetensors_checkpoint.h"

namespace skrull::model {
namespace {

namespace fs = std::filesystem;

std::string Floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// A small valid file: a [2, 3] F32 tensor and a [4] BF16 one.
SafetensorsWriter TwoTensors() {
  SafetensorsWriter w;
  EXPECT_TRUE(w.AddBytes("a", DType::kF32, {2, 3}, Floats({1, 2, 3, 4, 5, 6})).ok());
  std::string bf(8, '\x3f');
  EXPECT_TRUE(w.AddBytes("b", DType::kBF16, {4}, bf).ok());
  return w;
}

// Hand-builds a file from a header JSON and a data section.
std::string RawFile(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("skrull_st_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string ErrorOf(const std::string& bytes) {
  auto f = SafetensorsFile::FromBytes(bytes, "x.safetensors");
  EXPECT_FALSE(f.ok());
  return f.ok() ? "" : f.status().message();
}

TEST(Safetensors, WriteReadWriteIsByteIdentical) {
  auto bytes = TwoTensors().ToBytes();
  ASSERT_TRUE(bytes.ok());
  auto file = SafetensorsFile::FromBytes(*bytes, "mem");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ((*file)->tensors().size(), 2u);
  const TensorInfo* a = (*file)->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*file)->Data(*a), Floats({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*file)->metadata().at("format"), "pt");

  SafetensorsWriter again;
  for (const TensorInfo& t : (*file)->tensors()) {
    ASSERT_TRUE(again.AddBytes(t.name, t.dtype, t.shape, (*file)->Data(t)).ok());
  }
  auto bytes2 = again.ToBytes();
  ASSERT_TRUE(bytes2.ok());
  EXPECT_EQ(*bytes, *bytes2);
}

TEST(Safetensors, HeaderIsPaddedToEightBytesAndHasPtFormat) {
  SafetensorsWriter w = TwoTensors();
  std::string header = w.HeaderJson();
  EXPECT_EQ((8 + header.size()) % 8, 0u);
  auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(j["b"]["dtype"], "BF16");
  EXPECT_EQ(j["b"]["data_offsets"], nlohmann::json::array({24, 32}));
}

TEST(Safetensors, FileRoundTripIsAtomicAndIdentical) {
  TempDir dir;
  const std::string path = dir / "sub/model.safetensors";
  SafetensorsWriter w = TwoTensors();
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto expected = w.ToBytes();
  auto on_disk = ReadFileToString(path);
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(*on_disk, *expected);
  for (const auto& e : fs::directory_iterator(dir / "sub")) {
    EXPECT_EQ(e.path().filename(), "model.safetensors") << "temp file left behind";
  }
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->Data(*(*file)->Find("b")), std::string(8, '\x3f'));
}

TEST(Safetensors, EmptyTensorAndScalarAreValid) {
  SafetensorsWriter w;
  ASSERT_TRUE(w.AddBytes("empty", DType::kF32, {0, 5}, "").ok());
  ASSERT_TRUE(w.AddBytes("scalar", DType::kI64, {}, std::string(8, '\1')).ok());
  auto file = SafetensorsFile::FromBytes(*w.ToBytes(), "mem");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->Find("empty")->NumElements(), 0);
  EXPECT_EQ((*file)->Find("scalar")->NumElements(), 1);
}

TEST(Safetensors, WriterRejectsDuplicateAndWrongSize) {
  SafetensorsWriter w;
  ASSERT_TRUE(w.AddBytes("x", DType::kF32, {1}, Floats({1})).ok());
  EXPECT_NE(w.AddBytes("x", DType::kF32, {1}, Floats({1})).message().find("duplicate"),
            std::string::npos);
  Status s = w.AddBytes("y", DType::kF32, {2}, Floats({1}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'y'"), std::string::npos);
}

TEST(Safetensors, CorruptHeaderJsonIsAnError) {
  std::string msg = ErrorOf(RawFile("{\"a\": {\"dtype\": ", ""));
  EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
}

TEST(Safetensors, HeaderLengthPastEndOfFileIsTruncation) {
  std::string bytes = *TwoTensors().ToBytes();
  std::string msg = ErrorOf(bytes.substr(0, 20));
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(ErrorOf("abc").find("truncated"), std::string::npos);
}

TEST(Safetensors, TruncatedDataNamesTheTensor) {
  std::string bytes = *TwoTensors().ToBytes();
  std::string msg = ErrorOf(bytes.substr(0, bytes.size() - 3));
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
}

TEST(Safetensors, TrailingBytesAreAnError) {
  std::string msg = ErrorOf(*TwoTensors().ToBytes() + "zz");
  EXPECT_NE(msg.find("trailing"), std::string::npos) << msg;
}

TEST(Safetensors, UnsupportedDtypeNamesTensorAndFile) {
  std::string msg = ErrorOf(
      RawFile(R"({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", "xx"));
  EXPECT_NE(msg.find("unsupported dtype 'F8_E4M3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << msg;
}

TEST(Safetensors, OffsetsMustMatchShape) {
  std::string msg = ErrorOf(
      RawFile(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", "12345678"));
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 12"), std::string::npos) << msg;
}

TEST(Safetensors, OverlapAndGapAreErrors) {
  std::string overlap =
      ErrorOf(RawFile(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                      R"( "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})",
                      "123456"));
  EXPECT_NE(overlap.find("overlaps"), std::string::npos) << overlap;
  std::string gap =
      ErrorOf(RawFile(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},)"
                      R"( "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})",
                      "123456"));
  EXPECT_NE(gap.find("gap"), std::string::npos) << gap;
}

TEST(Safetensors, NegativeShapeAndBadMetadataAreErrors) {
  EXPECT_NE(ErrorOf(RawFile(R"({"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}})", ""))
                .find("non-negative"),
            std::string::npos);
  EXPECT_NE(ErrorOf(RawFile(R"({"__metadata__": {"format": 1}})", "")).find("__metadata__"),
            std::string::npos);
  EXPECT_NE(ErrorOf(RawFile("[1, 2]", "")).find("not a JSON object"), std::string::npos);
}

// Found by fuzz/safetensors_header_fuzzer: nlohmann throws out_of_range (not
// parse_error) for a number too large for a double; that escaped and aborted.
TEST(Safetensors, HeaderNumberTooLargeIsAnErrorNotACrash) {
  std::string msg = ErrorOf(RawFile(R"({"w": {"dtype": "U8", "shape": [1e999], )"
                                    R"("data_offsets": [0, 0]}})",
                                    ""));
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << msg;
}

// A zero dim makes the byte count 0, but NumElements multiplies the dims in
// order: [2^32, 2^31, 0] (U8, 0 bytes) overflowed int64 there (undefined
// behaviour).
TEST(Safetensors, ShapeWhoseElementCountOverflowsIsAnErrorEvenWithAZeroDim) {
  std::string msg = ErrorOf(RawFile(
      R"({"w": {"dtype": "U8", "shape": [4294967296, 2147483648, 0], "data_offsets": [0, 0]}})",
      ""));
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("overflow"), std::string::npos) << msg;
  auto ok = SafetensorsFile::FromBytes(
      RawFile(R"({"w": {"dtype": "U8", "shape": [4294967296, 0], "data_offsets": [0, 0]}})", ""),
      "x.safetensors");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->tensors()[0].NumElements(), 0);
}

TEST(Safetensors, HugeHeaderLengthIsRejectedWithoutAllocating) {
  std::string bytes(16, '\0');
  bytes[7] = 0x7f;  // ~9e18
  EXPECT_NE(ErrorOf(bytes).find("exceeds the limit"), std::string::npos);
}

TEST(Safetensors, MissingFileIsNotFound) {
  auto f = SafetensorsFile::Open("/nonexistent/model.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsConvert, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  // 1 + 3 * 2^-8 ties up to 1.015625 (even mantissa).
  const float in[] = {1.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f,
                      std::numeric_limits<float>::infinity()};
  uint16_t out[5];
  ConvertFromFloat32(in, 5, DType::kBF16, out);
  EXPECT_EQ(out[0], 0x3f80);
  EXPECT_EQ(out[1], 0x3f80);
  EXPECT_EQ(out[2], 0x3f82);
  EXPECT_EQ(out[3], 0xc020);
  EXPECT_EQ(out[4], 0x7f80);
  float back[5];
  ConvertToFloat32(DType::kBF16, out, 5, back);
  EXPECT_EQ(back[3], -2.5f);
  float nan = std::numeric_limits<float>::quiet_NaN();
  uint16_t n;
  ConvertFromFloat32(&nan, 1, DType::kBF16, &n);
  float nb;
  ConvertToFloat32(DType::kBF16, &n, 1, &nb);
  EXPECT_TRUE(std::isnan(nb));
}

TEST(SafetensorsConvert, Fp16RoundTripsEveryHalfValue) {
  // Every finite half converts to float and back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t in = static_cast<uint16_t>(h);
    if ((in & 0x7c00) == 0x7c00 && (in & 0x3ff) != 0) continue;  // NaN payloads
    float f;
    ConvertToFloat32(DType::kF16, &in, 1, &f);
    uint16_t out;
    ConvertFromFloat32(&f, 1, DType::kF16, &out);
    ASSERT_EQ(out, in) << "half 0x" << std::hex << h << " -> " << f;
  }
}

TEST(SafetensorsConvert, Fp16KnownValuesAndRounding) {
  const float in[] = {1.0f,           65504.0f,       65520.0f,          6.103515625e-05f,
                      5.9604645e-08f, 2.9802322e-08f, 1.0f + 1.0f / 2048};
  uint16_t out[7];
  ConvertFromFloat32(in, 7, DType::kF16, out);
  EXPECT_EQ(out[0], 0x3c00);
  EXPECT_EQ(out[1], 0x7bff);
  EXPECT_EQ(out[2], 0x7c00);  // rounds to inf
  EXPECT_EQ(out[3], 0x0400);  // smallest normal
  EXPECT_EQ(out[4], 0x0001);  // smallest subnormal
  EXPECT_EQ(out[5], 0x0000);  // half of it ties to even: zero
  EXPECT_EQ(out[6], 0x3c00);  // tie to even
}

// --- folders

void WriteShard(const std::string& path, const std::vector<std::string>& names) {
  SafetensorsWriter w;
  for (const auto& n : names) ASSERT_TRUE(w.AddBytes(n, DType::kF32, {1}, Floats({1})).ok());
  ASSERT_TRUE(w.WriteFile(path).ok());
}

void WriteIndex(const std::string& path, const std::map<std::string, std::string>& map) {
  nlohmann::json j = {{"metadata", {{"total_size", 0}}}, {"weight_map", map}};
  ASSERT_TRUE(WriteFileAtomically(path, j.dump()).ok());
}

TEST(SafetensorsCheckpoint, ShardedFolderWithIndex) {
  TempDir dir;
  WriteShard(dir / "model-00001-of-00002.safetensors", {"a", "b"});
  WriteShard(dir / "model-00002-of-00002.safetensors", {"c"});
  WriteIndex(dir / kSafetensorsIndexFile, {{"a", "model-00001-of-00002.safetensors"},
                                           {"b", "model-00001-of-00002.safetensors"},
                                           {"c", "model-00002-of-00002.safetensors"}});
  auto ckpt = SafetensorsCheckpoint::Open(dir.str());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ((*ckpt)->Names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_NE((*ckpt)->Find("c")->file->origin().find("00002"), std::string::npos);
}

TEST(SafetensorsCheckpoint, FolderWithSingleFileAndPlainFile) {
  TempDir dir;
  WriteShard(dir / kSafetensorsSingleFile, {"x"});
  auto folder = SafetensorsCheckpoint::Open(dir.str());
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_NE((*folder)->Find("x"), nullptr);
  auto file = SafetensorsCheckpoint::Open(dir / kSafetensorsSingleFile);
  ASSERT_TRUE(file.ok());
  EXPECT_NE((*file)->Find("x"), nullptr);
}

TEST(SafetensorsCheckpoint, IndexErrorsNameTensorAndFiles) {
  TempDir dir;
  WriteShard(dir / "s1.safetensors", {"a", "stray"});
  WriteIndex(dir / kSafetensorsIndexFile, {{"a", "s1.safetensors"}});
  auto stray = SafetensorsCheckpoint::Open(dir.str());
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("'stray' is not listed"), std::string::npos)
      << stray.status();

  WriteIndex(dir / kSafetensorsIndexFile,
             {{"a", "s1.safetensors"}, {"stray", "s1.safetensors"}, {"z", "s1.safetensors"}});
  auto wrong = SafetensorsCheckpoint::Open(dir.str());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("'z' is mapped to"), std::string::npos) << wrong.status();

  WriteIndex(dir / kSafetensorsIndexFile, {{"a", "missing.safetensors"}});
  auto missing = SafetensorsCheckpoint::Open(dir.str());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.safetensors"), std::string::npos);

  TempDir empty;
  auto none = SafetensorsCheckpoint::Open(empty.str());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(kSafetensorsIndexFile), std::string::npos);
}

}  // namespace
}  // namespace skrull::model
