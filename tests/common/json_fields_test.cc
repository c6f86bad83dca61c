#include "common/json_fields.h"

#include <gtest/gtest.h>

#include <cmath>

namespace skrull {
namespace {

using nlohmann::json;

// The error message of `v`, which must be an error.
template <typename T>
std::string ErrorOf(const StatusOr<T>& v) {
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  return v.ok() ? "" : v.status().message();
}

TEST(JsonFields, ReadsEveryTypeWhenPresent) {
  const json j = json::parse(
      R"({"i": -3, "u": 18446744073709551615, "d": 0.5, "s": "x", "b": true,
          "a": [1], "o": {"k": 1}})");
  const JsonFields f(j, "f.json");
  EXPECT_EQ(*f.RequiredInt("i"), -3);
  EXPECT_EQ(*f.RequiredUint("u"), UINT64_MAX);
  EXPECT_EQ(*f.RequiredDouble("d"), 0.5);
  EXPECT_EQ(*f.RequiredDouble("i"), -3.0) << "integers are numbers";
  EXPECT_EQ(*f.RequiredString("s"), "x");
  EXPECT_TRUE(*f.RequiredBool("b"));
  EXPECT_EQ((*f.RequiredArray("a"))->size(), 1u);
  EXPECT_EQ((**f.RequiredObject("o"))["k"], 1);
}

TEST(JsonFields, OptionalFieldsReturnTheFallbackWhenAbsentOrNull) {
  const json j = json::parse(R"({"n": null})");
  const JsonFields f(j, "f.json");
  for (const char* key : {"n", "absent"}) {
    EXPECT_EQ(*f.OptionalInt(key, 7), 7);
    EXPECT_EQ(*f.OptionalUint(key, 8), 8u);
    EXPECT_EQ(*f.OptionalDouble(key, 1.5), 1.5);
    EXPECT_EQ(*f.OptionalString(key, "dflt"), "dflt");
    EXPECT_FALSE(*f.OptionalBool(key, false));
    EXPECT_EQ(*f.OptionalArray(key), nullptr);
    EXPECT_EQ(*f.OptionalObject(key), nullptr);
  }
  EXPECT_TRUE(f.IsNull("n"));
  EXPECT_FALSE(f.IsNull("absent"));
}

TEST(JsonFields, RequiredFieldMissingNamesOriginAndPath) {
  const json j = json::parse(R"({"n": null})");
  const JsonFields f(j, "run/m.jsonl:3", "ranks[1]");
  EXPECT_EQ(ErrorOf(f.RequiredInt("rank")), "run/m.jsonl:3: ranks[1].rank: required field missing");
  EXPECT_EQ(ErrorOf(f.RequiredString("n")), "run/m.jsonl:3: ranks[1].n: required field missing")
      << "null reads as absent";
}

TEST(JsonFields, WrongTypeSaysWhatIsExpectedAndEchoesTheValue) {
  const json j =
      json::parse(R"({"i": 1.5, "s": 3, "b": "yes", "a": {}, "o": [], "d": "1", "q": "896"})");
  const JsonFields f(j, "c.json");
  EXPECT_EQ(ErrorOf(f.RequiredInt("i")), "c.json: i: must be an integer (got 1.5)");
  EXPECT_EQ(ErrorOf(f.RequiredUint("q")), "c.json: q: must be an integer (got \"896\")");
  EXPECT_EQ(ErrorOf(f.RequiredString("s")), "c.json: s: must be a string (got 3)");
  EXPECT_EQ(ErrorOf(f.OptionalBool("b", false)), "c.json: b: must be true or false (got \"yes\")");
  EXPECT_EQ(ErrorOf(f.RequiredArray("a")), "c.json: a: must be an array (got {})");
  EXPECT_EQ(ErrorOf(f.RequiredObject("o")), "c.json: o: must be an object (got [])");
  EXPECT_EQ(ErrorOf(f.OptionalDouble("d", 0)), "c.json: d: must be a number (got \"1\")");
}

TEST(JsonFields, RangeErrorsNameTheBoundsThatApply) {
  const json j = json::parse(R"({"zero": 0, "neg": -1, "big": 9223372036854775808,
                                 "half": 0.5, "ten": 10})");
  const JsonFields f(j, "p.json");
  EXPECT_EQ(ErrorOf(f.RequiredInt("zero", 1)), "p.json: zero: must be >= 1 (got 0)");
  EXPECT_EQ(ErrorOf(f.RequiredInt("ten", 0, 9)), "p.json: ten: must be in [0, 9] (got 10)");
  EXPECT_EQ(ErrorOf(f.RequiredInt("ten", JsonFields::kIntMin, 9)),
            "p.json: ten: must be <= 9 (got 10)");
  EXPECT_EQ(ErrorOf(f.RequiredInt("big")),
            "p.json: big: must be <= 9223372036854775807 (got 9223372036854775808)");
  EXPECT_EQ(ErrorOf(f.RequiredInt("big", 1)),
            "p.json: big: must be in [1, 9223372036854775807] (got 9223372036854775808)");
  EXPECT_EQ(ErrorOf(f.RequiredUint("neg")), "p.json: neg: must be >= 0 (got -1)");
  EXPECT_EQ(ErrorOf(f.RequiredUint("zero", 1)), "p.json: zero: must be >= 1 (got 0)");
  EXPECT_EQ(ErrorOf(f.RequiredDouble("neg", 0)), "p.json: neg: must be >= 0 (got -1)");
  EXPECT_EQ(ErrorOf(f.RequiredDouble("ten", 0, 1)), "p.json: ten: must be in [0, 1] (got 10)");
  EXPECT_EQ(ErrorOf(f.RequiredDouble("half", 1)), "p.json: half: must be >= 1 (got 0.5)");
  EXPECT_EQ(*f.RequiredInt("ten", 10, 10), 10) << "bounds are inclusive";
  EXPECT_EQ(*f.RequiredDouble("half", 0.5, 0.5), 0.5);
}

TEST(JsonFields, NestedReadersExtendThePath) {
  const json j = json::parse(R"({"ranks": [{"summary": {"peak": "x"}}]})");
  const JsonFields top(j, "s.json");
  const JsonFields rank = top.Nested("ranks[0]", j["ranks"][0]);
  const JsonFields summary = rank.Nested("summary", j["ranks"][0]["summary"]);
  EXPECT_EQ(summary.Path("peak"), "ranks[0].summary.peak");
  EXPECT_EQ(ErrorOf(summary.RequiredUint("peak")),
            "s.json: ranks[0].summary.peak: must be an integer (got \"x\")");
}

TEST(JsonFields, NonObjectReadsAsHavingNoFields) {
  const json j = json::parse("[1, 2]");
  const JsonFields f(j, "x.json");
  EXPECT_EQ(*f.OptionalInt("a", 4), 4);
  EXPECT_EQ(ErrorOf(f.RequiredInt("a")), "x.json: a: required field missing");
}

TEST(JsonFields, LongValuesAreCutInErrors) {
  const json j = {{"s", std::string(1000, 'a')}};
  const std::string m = ErrorOf(JsonFields(j, "x.json").RequiredInt("s"));
  EXPECT_LT(m.size(), 120u) << m;
  EXPECT_NE(m.find("...)"), std::string::npos) << m;
}

TEST(FieldErrors, ListsEveryProblemAfterOneOrigin) {
  const json j = json::parse(R"({"a": "x", "b": -1})");
  const JsonFields f(j, "m.json");
  FieldErrors errors("m.json");
  EXPECT_EQ(errors.Take(f.RequiredInt("a"), int64_t{5}), 5) << "fallback after an error";
  EXPECT_EQ(errors.Take(f.RequiredInt("b", 0)), 0);
  errors.Add("c", "must divide d");
  EXPECT_EQ(errors.size(), 3u);
  EXPECT_EQ(
      errors.ToStatus().message(),
      "m.json: a: must be an integer (got \"x\"); b: must be >= 0 (got -1); c: must divide d");
}

TEST(FieldErrors, OkWhenNothingWasRecorded) {
  FieldErrors errors("m.json");
  EXPECT_EQ(errors.Take(StatusOr<int>(3)), 3);
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(errors.ToStatus().ok());
}

}  // namespace
}  // namespace skrull
