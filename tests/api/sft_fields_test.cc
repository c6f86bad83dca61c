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
