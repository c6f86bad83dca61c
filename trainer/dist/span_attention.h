// Blockwise causal attention over spans as two plain (non-autograd) passes,
// so a caller can interleave communication between the parts of one
// attention call (cp_attention.cc: local spans overlap the K/V all-gather in
// forward and the dK/dV reduce-scatter in backward).
//
// The kernel is model::ChooseAttentionKernel's (flash_attention.h): for
// bf16/fp16 on a GPU with libtorch >= 2.6, one FlashAttention-2 varlen call
// over all spans (model::FlashAttentionForward/Backward); elsewhere
// model::CausalAttentionForward/Backward (attention.h) with blocks of exactly
// `block_rows` query rows: float32 compute, probabilities recomputed per
// block in backward, GQA by grouping query heads per K/V head. Both save the
// same float32 log-sum-exp per (query row, head), so out/lse from either
// forward feed either backward.
// Spans use model::AttentionSpan: query i of a span sees key j iff
// j <= i + causal_offset.
//
// Thread safety: pure functions; tensors must not be shared with writers.
#ifndef SKRULL_TRAINER_DIST_SPAN_ATTENTION_H_
#define SKRULL_TRAINER_DIST_SPAN_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <vector>

#include "trainer/model/attention.h"

namespace skrull::dist {

// Writes rows of every span into out (float [Tq, Hq, D]) and lse (float
// [Tq, Hq]). q: [Tq, Hq, D]; k, v: [Tk, Hkv, D] in any float dtype.
// REQUIRES: spans valid for q and k (as CausalAttention checks), disjoint
// query rows, out/lse float32 on q's device.
void SpanAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<model::AttentionSpan>& spans, double scale,
                          int64_t block_rows, at::Tensor& out, at::Tensor& lse);

// Given forward's out and lse and the output gradient dout (any float dtype,
// [Tq, Hq, D]), writes dq rows of every span and ADDS the key/value
// gradients into dk, dv (float32, k's shape).
void SpanAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                           const std::vector<model::AttentionSpan>& spans, double scale,
                           int64_t block_rows, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_SPAN_ATTENTION_H_
