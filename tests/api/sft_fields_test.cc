// The fields SFT users expect from other trainers (docs/job-spec.md):
// training.epochs, data.sources with weights, record formats and field
// mappings, data.eval. Parse, validate, round trip.
#include <gtest/gtest.h>

#include "api/job_spec.h"
#include "tests/api/job_builder.h"

namespace skrull::api {
namespace {

using testing::JobYaml;
using testing::kMinimalJob;
using testing::LoadErrors;

JobSpec MustLoad(const std::string& text) {
  StatusOr<JobSpec> spec = LoadJobSpec(text, "<test>");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

TEST(Epochs, EpochsAloneLeavesStepsToTheTrainer) {
  const JobSpec s = MustLoad(JobYaml().Set("spec.training.epochs", "3").Text());
  EXPECT_EQ(s.training.epochs, 3);
  EXPECT_EQ(s.training.steps, 0);
  const std::string yaml = ToYaml(s);
  EXPECT_NE(yaml.find("    epochs: 3\n"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("    steps:"), std::string::npos) << yaml;
  EXPECT_EQ(MustLoad(yaml), s);
  EXPECT_NE(DescribeJobSpec(s).find("Training 3 epochs (steps derived from the data size)"),
            std::string::npos)
      << DescribeJobSpec(s);
}

TEST(Epochs, NotSetKeepsStepsAndTheDocumentAsBefore) {
  const JobSpec s = MustLoad(kMinimalJob);
  EXPECT_EQ(s.training.epochs, 0);
  EXPECT_EQ(s.training.steps, 100);
  EXPECT_EQ(ToYaml(s).find("epochs"), std::string::npos);
  // A null epochs is not set; a null steps beside epochs is not set either.
  EXPECT_EQ(MustLoad(JobYaml().Set("spec.training.epochs", "~").Text()).training.steps, 100);
  EXPECT_EQ(
      MustLoad(JobYaml().Set("spec.training.epochs", "2").Set("spec.training.steps", "~").Text())
          .training.steps,
      0);
}

TEST(Epochs, StepsAndEpochsTogetherIsOneErrorNamingBoth) {
  EXPECT_EQ(
      LoadErrors(
          JobYaml().Set("spec.training.epochs", "2").Set("spec.training.steps", "50").Text()),
      std::vector<std::string>{
          "spec.training.epochs: set either steps or epochs, not both (got steps 50 and epochs "
          "2); remove one: epochs derives steps from the data size"});
}

TEST(Epochs, RangeIsChecked) {
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.training.epochs", "-1").Text()),
            std::vector<std::string>{"spec.training.epochs: must be in 1..2147483647 (got -1)"});
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.training.epochs", "two").Text()),
            std::vector<std::string>{"spec.training.epochs: expected an integer, got 'two'"});
}

TEST(Epochs, ValidateJobSpecRefusesACodeBuiltSpecWithBoth) {
  JobSpec s = MustLoad(kMinimalJob);
  s.training.epochs = 1;  // steps still 100
  EXPECT_FALSE(ValidateJobSpec(s, "code").ok());
  s.training.steps = 0;
  EXPECT_TRUE(ValidateJobSpec(s, "code").ok()) << ValidateJobSpec(s, "code");
}

}  // namespace
}  // namespace skrull::api

namespace skrull::api {
namespace {

TEST(RecordFormats, AlpacaAndShareGptAreTextFormatsWithFieldMappings) {
  const JobSpec s = MustLoad(JobYaml()
                                 .Set("spec.data.format", "alpaca")
                                 .Set("spec.data.fields", "{instruction: prompt, output: response}")
                                 .Text());
  EXPECT_EQ(s.data.format, DataFormat::kAlpaca);
  EXPECT_EQ(s.data.fields.at("instruction"), "prompt");
  EXPECT_TRUE(IsTextFormat(s.data.format));
  EXPECT_NE(ToYaml(s).find("    fields:\n      instruction: prompt\n      output: response\n"),
            std::string::npos)
      << ToYaml(s);
  EXPECT_EQ(MustLoad(ToYaml(s)), s);
  EXPECT_EQ(ToYaml(MustLoad(kMinimalJob)).find("fields"), std::string::npos);
  EXPECT_EQ(MustLoad(JobYaml().Set("spec.data.format", "sharegpt").Text()).data.format,
            DataFormat::kShareGpt);
}

TEST(RecordFormats, FieldsOutsideTheFormatAreAllReportedWithTheKeysItHas) {
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.data.format", "alpaca")
                           .Set("spec.data.fields", "{instrction: q, output: ''}")
                           .Text()),
            (std::vector<std::string>{
                "spec.data.fields.instrction: is not a field of format alpaca; map one of "
                "instruction, input, output, system; did you mean 'instruction'?",
                "spec.data.fields.output: is empty; name the field this data uses for 'output'"}));
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.data.fields", "{text: body}").Text()),
            std::vector<std::string>{
                "spec.data.fields.text: format tokenized-jsonl has no fields to map (its records "
                "hold token ids); remove fields or use a text format"});
}

}  // namespace
}  // namespace skrull::api

namespace skrull::api {
namespace {

constexpr char kTwoSources[] =
    "[{path: a/*.jsonl, weight: 3}, {path: /abs/b.jsonl.gz, format: alpaca, weight: 0.5, "
    "fields: {output: response}}]";

TEST(Sources, ReplacePathTakeTheDataFormatAndRoundTrip) {
  const JobSpec s = MustLoad(JobYaml()
                                 .Remove("spec.data.path")
                                 .Set("spec.data.format", "text-jsonl")
                                 .Set("spec.data.sources", kTwoSources)
                                 .Text());
  ASSERT_EQ(s.data.sources.size(), 2u);
  EXPECT_EQ(s.data.sources[0].path, "a/*.jsonl");
  EXPECT_EQ(s.data.sources[0].format, DataFormat::kTextJsonl);  // from spec.data.format
  EXPECT_EQ(s.data.sources[0].weight, 3.0);
  EXPECT_EQ(s.data.sources[1].format, DataFormat::kAlpaca);
  EXPECT_EQ(s.data.sources[1].fields.at("output"), "response");
  EXPECT_EQ(MustLoad(ToYaml(s)), s);
  EXPECT_NE(DescribeJobSpec(s).find("data a/*.jsonl (text-jsonl, weight 3), /abs/b.jsonl.gz "
                                    "(alpaca, weight 0.5)"),
            std::string::npos)
      << DescribeJobSpec(s);
  const StatusOr<JobSpec> based =
      LoadJobSpec(JobYaml().Remove("spec.data.path").Set("spec.data.sources", kTwoSources).Text(),
                  "<test>", "/jobs");
  ASSERT_TRUE(based.ok()) << based.status();
  EXPECT_EQ(based->data.sources[0].path, "/jobs/a/*.jsonl");
  EXPECT_EQ(based->data.sources[1].path, "/abs/b.jsonl.gz");
}

TEST(Sources, BadSourcesAreAllReportedNamingFieldValueAndFix) {
  EXPECT_EQ(
      LoadErrors(
          JobYaml()
              .Remove("spec.data.path")
              .Set("spec.data.sources",
                   "[{path: a.jsonl, weight: 0}, {weight: -2}, {path: c, fields: {x: y}}, 5]")
              .Text()),
      (std::vector<std::string>{
          "spec.data.sources[0].weight: must be > 0 (got 0); a source's share of the samples is "
          "weight / the sum of weights, e.g. 1; remove a source to leave it out",
          "spec.data.sources[1].path: required: a .jsonl or .jsonl.gz file, a directory of them, "
          "or a "
          "glob such as data/*.jsonl",
          "spec.data.sources[1].weight: must be > 0 (got -2); a source's share of the samples is "
          "weight / the sum of weights, e.g. 1; remove a source to leave it out",
          "spec.data.sources[2].fields.x: format tokenized-jsonl has no fields to map (its "
          "records hold token ids); remove fields or use a text format",
          "spec.data.sources[3]: expected a mapping, got '5'"}));
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.data.sources", "[{path: b.jsonl}]").Text()),
            std::vector<std::string>{"spec.data.sources: set either path or sources, not both "
                                     "(got path 'data/train.jsonl'); list that file as one of "
                                     "the sources"});
  EXPECT_EQ(
      LoadErrors(JobYaml().Set("spec.data.sources", "{path: b}").Text()),
      std::vector<std::string>{"spec.data.sources: expected a list of mappings, got a mapping"});
}

}  // namespace
}  // namespace skrull::api

namespace skrull::api {
namespace {

TEST(Eval, ReadsResolvesRoundTripsAndChecksItsFields) {
  const StatusOr<JobSpec> s =
      LoadJobSpec(JobYaml()
                      .Set("spec.data.eval", "{path: val.jsonl, everySteps: 50, maxSequences: 200}")
                      .Text(),
                  "<test>", "/jobs");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->data.eval.has_value());
  EXPECT_EQ(s->data.eval->path, "/jobs/val.jsonl");
  EXPECT_EQ(s->data.eval->format, DataFormat::kTokenizedJsonl);
  EXPECT_EQ(s->data.eval->every_steps, 50);
  EXPECT_EQ(s->data.eval->max_sequences, 200);
  EXPECT_EQ(MustLoad(ToYaml(*s)), *s);
  EXPECT_FALSE(MustLoad(kMinimalJob).data.eval.has_value());
  EXPECT_EQ(ToYaml(MustLoad(kMinimalJob)).find("eval"), std::string::npos);

  EXPECT_EQ(
      LoadErrors(JobYaml()
                     .Set("spec.data.eval",
                          "{everySteps: -1, maxSequences: -5, evrySteps: 1, format: sharegpt, "
                          "fields: {text: b}}")
                     .Text()),
      (std::vector<std::string>{
          "spec.data.eval.path: required: a held-out .jsonl or .jsonl.gz file, a directory "
          "of them, or a glob",
          "spec.data.eval.everySteps: must be in 0..2147483647 (got -1)",
          "spec.data.eval.maxSequences: must be in 0..2147483647 (got -5)",
          "spec.data.eval.evrySteps: unknown field; did you mean 'everySteps'?",
          "spec.data.eval.fields.text: is not a field of format sharegpt; map one of "
          "conversations, from, value, system, human, gpt"}));
}

}  // namespace
}  // namespace skrull::api
