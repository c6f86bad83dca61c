#include "common/text_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace skrull {
namespace {

TEST(WithCommas, GroupsThousands) {
  EXPECT_EQ(WithCommas(0), "0");
  EXPECT_EQ(WithCommas(999), "999");
  EXPECT_EQ(WithCommas(1000), "1,000");
  EXPECT_EQ(WithCommas(1234567), "1,234,567");
  EXPECT_EQ(WithCommas(-1234), "-1,234");
}

TEST(WithCommas, HandlesTheInt64Extremes) {
  // -INT64_MIN overflows; the old copies negated it.
  EXPECT_EQ(WithCommas(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
  EXPECT_EQ(WithCommas(std::numeric_limits<int64_t>::max()), "9,223,372,036,854,775,807");
}

TEST(FormatTable, AlignsFirstColumnLeftAndOthersRight) {
  EXPECT_EQ(FormatTable({"policy", "ms"}, {{"skrull", "1.5"}, {"cp-all", "12.25"}}),
            "policy     ms\n"
            "-------------\n"
            "skrull    1.5\n"
            "cp-all  12.25\n");
}

TEST(FormatTable, DropsCellsPastTheHeader) {
  EXPECT_EQ(FormatTable({"a"}, {{"x", "extra"}}), "a\n-\nx\n");
}

TEST(Fmt, FormatsOneDouble) { EXPECT_EQ(Fmt("%.2f", 3.14159), "3.14"); }

}  // namespace
}  // namespace skrull
