// skrull-tokenize: output shape, --chat, and the first bad line's error.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_util.h"
#include "tests/tokenizer/tokenizer_test_util.h"

namespace skrull::data {
namespace {

namespace fs = std::filesystem;

class TokenizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("SKRULL_BIN_DIR");
    ASSERT_NE(bin, nullptr) << "SKRULL_BIN_DIR is not set; run through ctest";
    tool_ = std::string(bin) + "/skrull-tokenize";
    dir_ = fs::temp_directory_path() /
           ("skrull_tokenize_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    tokenizer::testing::TokenizerJsonBuilder b;
    end_ = b.Added("<|end|>", true);
    std::ofstream(dir_ / "tokenizer.json") << b.Json();
    std::ofstream(dir_ / "tokenizer_config.json")
        << R"({"chat_template": "{% for m in messages %}{{ m.content }}<|end|>{% endfor %}"})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the tool on `input`; returns the exit status, stdout and stderr.
  int Run(const std::string& flags, const std::string& input, std::string* out, std::string* err) {
    std::ofstream(dir_ / "in.jsonl", std::ios::binary) << input;
    const std::string cmd = tool_ + " --tokenizer " + dir_.string() + " " + flags + " < " +
                            (dir_ / "in.jsonl").string() + " > " + (dir_ / "out").string() +
                            " 2> " + (dir_ / "err").string();
    const int rc = std::system(cmd.c_str());
    *out = ReadFileToString((dir_ / "out").string()).value();
    *err = ReadFileToString((dir_ / "err").string()).value();
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  std::string tool_;
  fs::path dir_;
  int end_ = 0;
};

TEST_F(TokenizeCliTest, TextLinesBecomeInputIds) {
  std::string out, err;
  ASSERT_EQ(Run("", "{\"text\": \"ab\"}\n\n{\"text\": \"c<|end|>\"}\n", &out, &err), 0) << err;
  EXPECT_EQ(out,
            "{\"input_ids\": [97, 98]}\n{\"input_ids\": [99, " + std::to_string(end_) + "]}\n");
}

TEST_F(TokenizeCliTest, ChatLinesGetLabels) {
  std::string out, err;
  ASSERT_EQ(
      Run("--chat",
          R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})"
          "\n",
          &out, &err),
      0)
      << err;
  const std::string e = std::to_string(end_);
  EXPECT_EQ(out, "{\"input_ids\": [113, " + e + ", 97, " + e + "], \"labels\": [-100, -100, 97, " +
                     e + "]}\n");
}

TEST_F(TokenizeCliTest, FirstBadLineStopsWithFileLineAndWhy) {
  std::string out, err;
  EXPECT_EQ(Run("", "{\"text\": \"ok\"}\n{\"messages\": []}\n", &out, &err), 1);
  EXPECT_EQ(err, "<stdin>:2: has \"messages\"; pass --chat to encode chats\n");
  EXPECT_EQ(Run("--chat", "{\"text\": \"ok\"}\n", &out, &err), 1);
  EXPECT_EQ(err, "<stdin>:1: has \"text\" but --chat expects {\"messages\": [...]}\n");
  EXPECT_EQ(Run("", "{\"text\": \"bad \xff byte\"}\n", &out, &err), 1);
  EXPECT_EQ(err.rfind("<stdin>:1: not valid JSON (or not UTF-8)", 0), 0u) << err;
  const std::string deep = "{\"text\": " + std::string(100, '[') + std::string(100, ']') + "}\n";
  EXPECT_EQ(Run("", deep, &out, &err), 1);
  EXPECT_EQ(err.rfind("<stdin>:1: JSON nested deeper than 64 levels", 0), 0u) << err;
}

// Guards that a file without newlines stops at the line cap (the trainer's
// default) instead of growing one line until std::bad_alloc.
TEST_F(TokenizeCliTest, FileWithoutNewlinesStopsAtTheLineCap) {
  const std::string cmd = tool_ + " --tokenizer " + dir_.string() + " --input /dev/zero > " +
                          (dir_ / "out").string() + " 2> " + (dir_ / "err").string();
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  const std::string err = ReadFileToString((dir_ / "err").string()).value();
  EXPECT_EQ(err.rfind("/dev/zero:1: line is longer than 67108864 bytes", 0), 0u) << err;
}

}  // namespace
}  // namespace skrull::data
