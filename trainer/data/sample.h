// Sample: one training sequence as the model and the loss see it.
//
// Contract with the model / loss code: targets are ALREADY SHIFTED.
// targets[i] is the token to predict at position i (the label of position
// i + 1), and targets.back() is kIgnoreIndex. kIgnoreIndex (-100, the Hugging
// Face convention) means "no loss here". Because no position needs its
// neighbour, a packed or sharded stream of samples needs no cross-boundary
// shifting: cut input_ids and targets at the same offsets.
//
// Thread safety: plain values.
#ifndef SKRULL_TRAINER_DATA_SAMPLE_H_
#define SKRULL_TRAINER_DATA_SAMPLE_H_

#include <cstdint>
#include <vector>

namespace skrull::data {

// Target (and unshifted label) value that carries no loss.
inline constexpr int32_t kIgnoreIndex = -100;

struct Sample {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> targets;  // same length as input_ids; already shifted
};

// Number of positions that carry loss (targets != kIgnoreIndex).
int64_t LabelTokens(const Sample& sample);

// Builds a Sample from token ids and UNSHIFTED labels in the Hugging Face
// convention (labels[i] is the label of token i; kIgnoreIndex masks it):
// targets[i] = labels[i + 1], targets.back() = kIgnoreIndex. An empty `labels`
// means "every token is a label": targets[i] = input_ids[i + 1].
// REQUIRES: labels.empty() || labels.size() == input_ids.size().
Sample MakeShiftedSample(std::vector<int32_t> input_ids, const std::vector<int32_t>& labels);

// The label-token count MakeShiftedSample would give for the first
// `length` tokens (length <= input_ids' size), without building the sample.
// `labels` as in MakeShiftedSample (empty = every token is a label).
int64_t ShiftedLabelTokens(int64_t length, const std::vector<int32_t>& labels);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_SAMPLE_H_
