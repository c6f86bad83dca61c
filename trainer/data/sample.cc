#include "trainer/data/sample.h"

#include <utility>

#include "common/status.h"

namespace skrull::data {

int64_t LabelTokens(const Sample& sample) {
  int64_t n = 0;
  for (int32_t t : sample.targets) n += (t != kIgnoreIndex);
  return n;
}

Sample MakeShiftedSample(std::vector<int32_t> input_ids, const std::vector<int32_t>& labels) {
  SKRULL_CHECK(labels.empty() || labels.size() == input_ids.size())
      << "labels " << labels.size() << " vs input_ids " << input_ids.size();
  Sample s;
  const size_t n = input_ids.size();
  s.targets.resize(n, kIgnoreIndex);
  const std::vector<int32_t>& source = labels.empty() ? input_ids : labels;
  for (size_t i = 0; i + 1 < n; ++i) s.targets[i] = source[i + 1];
  s.input_ids = std::move(input_ids);
  return s;
}

int64_t ShiftedLabelTokens(int64_t length, const std::vector<int32_t>& labels) {
  if (length <= 1) return 0;
  if (labels.empty()) return length - 1;
  SKRULL_CHECK(length <= static_cast<int64_t>(labels.size()));
  int64_t n = 0;
  for (int64_t i = 1; i < length; ++i) n += (labels[i] != kIgnoreIndex);
  return n;
}

}  // namespace skrull::data
