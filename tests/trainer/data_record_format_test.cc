// Alpaca, ShareGPT and field-mapped records (record_format.h): each reads as
// the text-jsonl messages record it stands for, so ids and the loss mask are
// the chat template's; a missing mapped field names FILE:LINE and the field.
#include "trainer/data/record_format.h"

#include <gtest/gtest.h>

#include "tests/trainer/data_test_util.h"
#include "trainer/data/jsonl_record.h"

namespace skrull::data {
namespace {

using Fields = std::map<std::string, std::string>;

std::string Rewrite(const std::string& line, api::DataFormat f, const Fields& fields = {}) {
  StatusOr<std::string> r = RewriteAsTextRecord(line, f, fields);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : "";
}

std::string RewriteError(const std::string& line, api::DataFormat f, const Fields& fields = {}) {
  StatusOr<std::string> r = RewriteAsTextRecord(line, f, fields);
  return r.ok() ? "ok: " + *r : r.status().message();
}

TEST(RecordFormat, AlpacaIsSystemUserAndAssistantMessages) {
  EXPECT_EQ(Rewrite(R"({"instruction": "Add", "input": "2+2", "output": "4", "system": "S"})",
                    api::DataFormat::kAlpaca),
            R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":"Add\n2+2"},)"
            R"({"role":"assistant","content":"4"}]})");
  // input and system are optional; an empty input adds nothing.
  EXPECT_EQ(
      Rewrite(R"({"instruction": "Hi", "input": "", "output": "Hello"})", api::DataFormat::kAlpaca),
      R"({"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}]})");
}

TEST(RecordFormat, ShareGptMapsRoleNames) {
  const std::string want =
      R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},)"
      R"({"role":"assistant","content":"a"}]})";
  EXPECT_EQ(Rewrite(R"({"system": "S", "conversations": [{"from": "human", "value": "q"},)"
                    R"( {"from": "gpt", "value": "a"}]})",
                    api::DataFormat::kShareGpt),
            want);
  EXPECT_EQ(Rewrite(R"({"conversations": [{"from": "system", "value": "S"},)"
                    R"( {"from": "user", "value": "q"}, {"from": "assistant", "value": "a"}]})",
                    api::DataFormat::kShareGpt),
            want);
  // Other names through spec.data.fields.
  EXPECT_EQ(Rewrite(R"({"sys": "S", "dialog": [{"who": "me", "text": "q"},)"
                    R"( {"who": "bot", "text": "a"}]})",
                    api::DataFormat::kShareGpt,
                    {{"conversations", "dialog"},
                     {"from", "who"},
                     {"value", "text"},
                     {"human", "me"},
                     {"gpt", "bot"},
                     {"system", "sys"}}),
            want);
}

TEST(RecordFormat, MappedTextJsonlReadsTheMappedNames) {
  EXPECT_EQ(Rewrite(R"({"body": "hello"})", api::DataFormat::kTextJsonl, {{"text", "body"}}),
            R"({"text":"hello"})");
  EXPECT_EQ(
      Rewrite(R"({"chat": [{"r": "user", "c": "q"}, {"r": "assistant", "c": "a"}]})",
              api::DataFormat::kTextJsonl, {{"messages", "chat"}, {"role", "r"}, {"content", "c"}}),
      R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]})");
  EXPECT_FALSE(NeedsRewrite(api::DataFormat::kTextJsonl, {}));
  EXPECT_TRUE(NeedsRewrite(api::DataFormat::kAlpaca, {}));
}

TEST(RecordFormat, ErrorsNameTheFieldItsStandardNameAndTheFix) {
  EXPECT_EQ(RewriteError(R"({"prompt": "q"})", api::DataFormat::kAlpaca,
                         {{"instruction", "prompt"}, {"output", "response"}}),
            "missing \"response\" (the alpaca output, spec.data.fields.output); add it, or map "
            "the name this file uses with spec.data.fields.output");
  EXPECT_EQ(RewriteError(R"({"output": "a"})", api::DataFormat::kAlpaca),
            "missing \"instruction\" (alpaca); add it, or map the name this file uses with "
            "spec.data.fields.instruction");
  EXPECT_EQ(RewriteError(R"({"instruction": 3, "output": "a"})", api::DataFormat::kAlpaca),
            "\"instruction\" (alpaca) must be a string, got number");
  EXPECT_EQ(RewriteError(R"({"conversations": [{"from": "bob", "value": "q"}]})",
                         api::DataFormat::kShareGpt),
            "\"conversations\" (sharegpt)[0]: role 'bob' is not one of 'human' (user), 'gpt' "
            "(assistant) or 'system' (first turn only); map this data's role values with "
            "spec.data.fields.human and spec.data.fields.gpt");
  EXPECT_EQ(RewriteError(R"([1])", api::DataFormat::kShareGpt).substr(0, 20),
            "not one JSON object ");
  EXPECT_EQ(RewriteError(std::string(100, '[') + std::string(100, ']'), api::DataFormat::kAlpaca)
                .substr(0, 30),
            "JSON nested deeper than 64 lev");
}

// Through the Dataset: the ids and labels of an alpaca line equal those of the
// messages line it stands for (byte tokenizer's chat format).
TEST(RecordFormat, DatasetReadsAlpacaAsItsMessagesAndNamesFileAndLine) {
  DatasetOptions alpaca =
      WriteData("{\"prompt\": \"Add 2+2\", \"response\": \"4\"}\n", api::DataFormat::kAlpaca);
  alpaca.fields = {{"instruction", "prompt"}, {"output", "response"}};
  DatasetOptions text;
  text.path = alpaca.path + ".text";
  text.format = api::DataFormat::kTextJsonl;
  std::ofstream(text.path) << "{\"messages\": [{\"role\": \"user\", \"content\": \"Add 2+2\"}, "
                              "{\"role\": \"assistant\", \"content\": \"4\"}]}\n";
  std::unique_ptr<Dataset> a = OpenOk(alpaca);
  std::unique_ptr<Dataset> t = OpenOk(text);
  ASSERT_TRUE(a && t);
  StatusOr<Sample> sa = a->Get(0);
  StatusOr<Sample> st = t->Get(0);
  ASSERT_TRUE(sa.ok() && st.ok());
  EXPECT_EQ(sa->input_ids, st->input_ids);
  EXPECT_EQ(sa->targets, st->targets);
  EXPECT_LT(a->LabelTokenCount(0), a->Length(0));  // the prompt carries no loss

  DatasetOptions bad = WriteData("{\"prompt\": \"q\", \"response\": \"a\"}\n{\"prompt\": \"q\"}\n",
                                 api::DataFormat::kAlpaca);
  bad.fields = alpaca.fields;
  auto opened = Dataset::Open(bad);
  ASSERT_FALSE(opened.ok());
  EXPECT_HAS(opened.status().message(), bad.path + ":2: missing \"response\" (the alpaca output");
}

}  // namespace
}  // namespace skrull::data
