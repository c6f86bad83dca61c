// spec.training.recompute and spec.checkpoint.keepLast: parse,
// validation with the field path, defaults, and the YAML round trip.
#include <gtest/gtest.h>

#include "api/job_spec.h"
#include "tests/api/job_builder.h"

namespace skrull::api {
namespace {

using testing::JobYaml;
using testing::LoadErrors;

TEST(RecomputeAndKeepLast, DefaultToNoneAndKeepAll) {
  StatusOr<JobSpec> s = LoadJobSpec(JobYaml().Text(), "<test>");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->training.recompute, Recompute::kNone);
  EXPECT_EQ(s->checkpoint.keep_last, 0);
  // Unset fields stay out of the document (and so out of older hashes).
  EXPECT_EQ(ToYaml(*s).find("recompute"), std::string::npos);
  EXPECT_EQ(ToYaml(*s).find("keepLast"), std::string::npos);
}

TEST(RecomputeAndKeepLast, ParseAndRoundTrip) {
  for (const auto& [text, mode] :
       {std::pair{"none", Recompute::kNone}, std::pair{"selective", Recompute::kSelective},
        std::pair{"full", Recompute::kFull}}) {
    StatusOr<JobSpec> s = LoadJobSpec(
        JobYaml().Set("spec.training.recompute", text).Set("spec.checkpoint.keepLast", "3").Text(),
        "<test>");
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->training.recompute, mode);
    EXPECT_EQ(s->checkpoint.keep_last, 3);
    StatusOr<JobSpec> back = LoadJobSpec(ToYaml(*s), "<round trip>");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(*back == *s) << ToYaml(*s);
    JobSpec other = *s;
    other.checkpoint.keep_last = 4;
    EXPECT_FALSE(other == *s);
  }
}

TEST(RecomputeAndKeepLast, RefusedValuesNameTheFieldAndWhatIsAllowed) {
  const auto errors = LoadErrors(JobYaml()
                                     .Set("spec.training.recompute", "sometimes")
                                     .Set("spec.checkpoint.keepLast", "-1")
                                     .Set("spec.checkpoint.keepFirst", "1")
                                     .Text());
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("spec.training.recompute: must be one of none, selective, full"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("spec.checkpoint.keepLast"), std::string::npos) << all;
  EXPECT_NE(all.find("spec.checkpoint.keepFirst"), std::string::npos) << all;
}

}  // namespace
}  // namespace skrull::api
