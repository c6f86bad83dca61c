#include "controller/kube/label_selector.h"

#include <gtest/gtest.h>

namespace skrull::kube {
namespace {

bool Match(const std::string& selector, const nlohmann::json& labels) {
  StatusOr<LabelSelector> s = LabelSelector::Parse(selector);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() && s->Matches(labels);
}

TEST(LabelSelector, EmptyMatchesEverything) {
  EXPECT_TRUE(Match("", nullptr));
  EXPECT_TRUE(Match("  ", {{"a", "b"}}));
}

TEST(LabelSelector, EqualityAndInequality) {
  const nlohmann::json labels = {{"app", "skrull"}, {"role", "worker"}};
  EXPECT_TRUE(Match("app=skrull", labels));
  EXPECT_TRUE(Match("app==skrull", labels));
  EXPECT_FALSE(Match("app=other", labels));
  EXPECT_TRUE(Match("app!=other", labels));
  EXPECT_FALSE(Match("app!=skrull", labels));
  EXPECT_TRUE(Match("missing!=x", labels)) << "!= matches objects without the label";
  EXPECT_TRUE(Match("app = skrull , role = worker", labels));
  EXPECT_FALSE(Match("app=skrull,role=master", labels));
}

TEST(LabelSelector, SetBasedRequirements) {
  const nlohmann::json labels = {{"skrull.io/job", "j1"}, {"tier", "gpu"}};
  EXPECT_TRUE(Match("tier in (cpu,gpu)", labels));
  EXPECT_TRUE(Match("tier in (cpu, gpu),skrull.io/job", labels));
  EXPECT_FALSE(Match("tier notin (gpu)", labels));
  EXPECT_TRUE(Match("other notin (gpu)", labels)) << "notin matches objects without the label";
  EXPECT_TRUE(Match("skrull.io/job", labels));
  EXPECT_FALSE(Match("!skrull.io/job", labels));
  EXPECT_TRUE(Match("!other", labels));
  EXPECT_FALSE(Match("other", labels));
  EXPECT_FALSE(Match("tier in (cpu)", nullptr));
}

TEST(LabelSelector, MatchesObjectReadsMetadataLabels) {
  StatusOr<LabelSelector> s = LabelSelector::Parse("a=b");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->MatchesObject({{"metadata", {{"labels", {{"a", "b"}}}}}}));
  EXPECT_FALSE(s->MatchesObject({{"metadata", {{"name", "x"}}}}));
  EXPECT_FALSE(s->MatchesObject(nullptr));
}

TEST(LabelSelector, MalformedRequirementsNameTheRequirementAndWhy) {
  struct Case {
    std::string selector;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{{"a in (x", "missing \")\""},
                                         {"a in x", "expected \"(\""},
                                         {"a,,b", "empty requirement"},
                                         {"a=b c", "invalid value \"b c\""},
                                         {"a>1", "unsupported operator"},
                                         {"=x", "invalid key \"\""}}) {
    StatusOr<LabelSelector> s = LabelSelector::Parse(c.selector);
    ASSERT_FALSE(s.ok()) << c.selector;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("label selector \"" + c.selector + "\""), std::string::npos)
        << s.status();
    EXPECT_NE(s.status().message().find(c.expected), std::string::npos) << s.status();
  }
}

}  // namespace
}  // namespace skrull::kube
