// LM head + cross-entropy in token chunks, so the [T, V] logits of a long
// stream never exist at once (forward or backward).
#ifndef SKRULL_TRAINER_MODEL_CHUNKED_LOSS_H_
#define SKRULL_TRAINER_MODEL_CHUNKED_LOSS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace skrull::model {

inline constexpr int64_t kIgnoreIndex = -100;

// Sum over rows t with targets[t] != kIgnoreIndex of
//   logsumexp(logits[t]) - logits[t, targets[t]],  logits = hidden @ weight^T,
// where each chunk's logits are computed in hidden's dtype (as an HF LM head)
// and the softmax and sum in float32. Returns a float32 scalar.
//   hidden: [T, H]; weight: [V, H]; targets: [T] int64.
// A custom autograd function: backward recomputes each chunk's logits, so
// the extra memory is one [chunk_tokens, V] float32 block, plus a float32
// [V, H] gradient accumulator when weight is not float32 and needs a grad.
// REQUIRES: chunk_tokens >= 1; targets in [0, V) or kIgnoreIndex.
at::Tensor LinearCrossEntropySum(const at::Tensor& hidden, const at::Tensor& weight,
                                 const at::Tensor& targets, int64_t chunk_tokens);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_CHUNKED_LOSS_H_
