#include "trainer/data/sample.h"

#include <gtest/gtest.h>

namespace skrull::data {
namespace {

using Ids = std::vector<int32_t>;

TEST(Sample, WithoutLabelsEveryNextTokenIsTheTarget) {
  Sample s = MakeShiftedSample({10, 11, 12, 13}, {});
  EXPECT_EQ(s.input_ids, (Ids{10, 11, 12, 13}));
  EXPECT_EQ(s.targets, (Ids{11, 12, 13, kIgnoreIndex}));
  EXPECT_EQ(LabelTokens(s), 3);
}

TEST(Sample, LabelsAreShiftedByOneAndMasksFollowThem) {
  // Unshifted labels: token 2 and 3 are labelled.
  Sample s = MakeShiftedSample({10, 11, 12, 13}, {kIgnoreIndex, kIgnoreIndex, 12, 13});
  EXPECT_EQ(s.targets, (Ids{kIgnoreIndex, 12, 13, kIgnoreIndex}));
  EXPECT_EQ(LabelTokens(s), 2);
}

TEST(Sample, FirstLabelNeverBecomesATarget) {
  Sample s = MakeShiftedSample({7, 8}, {7, kIgnoreIndex});
  EXPECT_EQ(s.targets, (Ids{kIgnoreIndex, kIgnoreIndex}));
  EXPECT_EQ(LabelTokens(s), 0);
}

TEST(Sample, SingleTokenHasNoTarget) {
  Sample s = MakeShiftedSample({5}, {});
  EXPECT_EQ(s.targets, (Ids{kIgnoreIndex}));
  EXPECT_EQ(LabelTokens(s), 0);
}

TEST(Sample, ShiftedLabelTokensMatchesBuiltSampleForEveryPrefix) {
  const Ids ids = {1, 2, 3, 4, 5, 6};
  const Ids labels = {1, kIgnoreIndex, 3, kIgnoreIndex, 5, 6};
  for (int64_t len = 1; len <= 6; ++len) {
    Ids prefix_ids(ids.begin(), ids.begin() + len);
    Ids prefix_labels(labels.begin(), labels.begin() + len);
    EXPECT_EQ(ShiftedLabelTokens(len, labels),
              LabelTokens(MakeShiftedSample(prefix_ids, prefix_labels)))
        << len;
    EXPECT_EQ(ShiftedLabelTokens(len, {}), LabelTokens(MakeShiftedSample(prefix_ids, {}))) << len;
  }
}

TEST(Sample, PackedSamplesNeedNoCrossBoundaryShift) {
  // Concatenating two samples' (input_ids, targets) keeps every target right:
  // the last position of each sample predicts nothing.
  Sample a = MakeShiftedSample({1, 2, 3}, {});
  Sample b = MakeShiftedSample({4, 5}, {});
  Ids targets = a.targets;
  targets.insert(targets.end(), b.targets.begin(), b.targets.end());
  EXPECT_EQ(targets, (Ids{2, 3, kIgnoreIndex, 5, kIgnoreIndex}));
}

}  // namespace
}  // namespace skrull::data
