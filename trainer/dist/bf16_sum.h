// Sums of bf16 tensors over a Group: the wire format of
// spec.training.gradReduceDtype bf16 (c10d_collectives.h converts the float32
// gradients to bf16 and back around these).
//
// NCCL reduces bf16 itself (StartAllReduceSum, StartReduceScatterSum).
// ProcessGroupGloo in libtorch 1.13 has no bf16 type ("Invalid scalar type"
// from its getFunction), so on Gloo the bf16 values travel as same-size fp16
// payloads through collectives that only move data (an all-gather, an
// all-to-all), and each rank sums what arrived (at::sum: float accumulation,
// one rounding to bf16), as cp_exchange.h's Gloo reduce-scatter does. Either
// way the result is within docs/architecture.md's bound ("Gradient
// precision") of the float32 sum.
//
// Thread safety: as Group (one issuing thread per rank; the same sequence of
// collectives on every member).
#ifndef SKRULL_TRAINER_DIST_BF16_SUM_H_
#define SKRULL_TRAINER_DIST_BF16_SUM_H_

#include <ATen/core/Tensor.h>

#include "trainer/dist/process_groups.h"

namespace skrull::dist {

// In-place element-wise sum over the group of a contiguous bf16 tensor.
PendingCollective StartBf16AllReduceSum(Group& group, const at::Tensor& tensor);

// out = sum over group ranks of input[rank*n : (rank+1)*n], all bf16.
// REQUIRES: input.size(0) == group.size * out.size(0), both contiguous.
PendingCollective StartBf16ReduceScatterSum(Group& group, const at::Tensor& input,
                                            const at::Tensor& out);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_BF16_SUM_H_
