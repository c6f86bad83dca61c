#include "common/status.h"

#include <gtest/gtest.h>

namespace skrull {
namespace {

StatusOr<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgumentError("must be > 0 (got " + std::to_string(x) + ")");
  return x;
}

Status UsesMacros(int x, int* out) {
  SKRULL_ASSIGN_OR_RETURN(*out, ParsePositive(x));
  SKRULL_RETURN_IF_ERROR(x > 100 ? FailedPreconditionError("too big") : OkStatus());
  return OkStatus();
}

TEST(Status, OkByDefaultAndToString) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  Status e = InvalidArgumentError("spec.x: bad");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.ToString(), "INVALID_ARGUMENT: spec.x: bad");
  EXPECT_EQ(e.WithContext("job.yaml").message(), "job.yaml: spec.x: bad");
  EXPECT_TRUE(OkStatus().WithContext("ignored").ok());
}

TEST(StatusOr, CarriesValueOrError) {
  auto good = ParsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  auto bad = ParsePositive(0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "must be > 0 (got 0)");
}

TEST(StatusOr, ConstructedFromOkStatusIsInternalError) {
  StatusOr<int> s{OkStatus()};
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
}

TEST(StatusMacros, PropagateFirstError) {
  int out = 0;
  EXPECT_TRUE(UsesMacros(5, &out).ok());
  EXPECT_EQ(out, 5);
  EXPECT_EQ(UsesMacros(-1, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(UsesMacros(101, &out).code(), StatusCode::kFailedPrecondition);
}

TEST(CheckDeathTest, AbortsWithContext) {
  EXPECT_DEATH(SKRULL_CHECK(1 == 2) << "rank " << 3, "1 == 2: rank 3");
}

}  // namespace
}  // namespace skrull
