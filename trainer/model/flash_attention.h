// Which kernel computes causal attention over spans, and the FlashAttention-2
// varlen path (ATen's at::_flash_attention_forward/_backward with cumulative
// sequence lengths) that attends a whole micro-batch's spans in one call.
//
// The rule (SelectAttentionKernel) picks kFlashVarlen only when all hold:
//   1. libtorch >= 2.6 (compat::HasFlashVarlen());
//   2. the tensors are on a CUDA device;
//   3. q, k, v are bfloat16 or float16 (flash has no float32 kernel);
//   4. libtorch's SDPA selector accepts flash for this GPU, dtype, heads and
//      head dim (compat::FlashKernelUsable: built with flash, sm80..sm90,
//      flash SDP not switched off);
//   5. head_dim % 8 == 0 and head_dim <= 256, Hq a multiple of Hkv;
//   6. every span is bottom-right causal after trimming keys nobody sees:
//      k_len >= q_len + causal_offset (local sequences: offset 0, k = q;
//      context-parallel query chunks: offset = chunk start, keys = the
//      sequence up to the chunk's end);
//   7. not (longest span has 1 query and Hq != Hkv): flash then swaps heads
//      into the sequence axis and returns its log-sum-exp in another layout.
// Everything else (CPU, float32, libtorch 1.13) uses the chunked path
// (attention.h CausalAttention*), which the CPU suite tests.
//
// Both kernels produce the same float32 log-sum-exp per (query row, head)
// (natural log of the sum of exp(scale * score)), so a caller that splits
// forward and backward (trainer/dist/span_attention.h) may mix them.
//
// Thread safety: pure functions; FlashKernelUsable's cache is locked.
#ifndef SKRULL_TRAINER_MODEL_FLASH_ATTENTION_H_
#define SKRULL_TRAINER_MODEL_FLASH_ATTENTION_H_

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/model/attention.h"

namespace skrull::model {

enum class AttentionKernel { kChunked, kFlashVarlen };

// "chunked", "flash-varlen".
std::string AttentionKernelName(AttentionKernel kernel);

// What the choice depends on; DescribeAttentionCall gathers it.
struct AttentionCallFacts {
  bool flash_built = false;             // rule 1
  bool on_cuda = false;                 // rule 2
  c10::ScalarType dtype = c10::kFloat;  // rule 3
  bool flash_supported = false;         // rule 4
  int64_t head_dim = 0;                 // rule 5
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  bool spans_bottom_right = true;  // rule 6
  int64_t max_q_len = 0;           // rule 7 (0: no queries)
};

// The rule above. Pure.
AttentionKernel SelectAttentionKernel(const AttentionCallFacts& facts);

// Facts of attending `spans` of q ([Tq, Hq, D]) against k ([Tk, Hkv, D]).
// Probes the device (compat::FlashKernelUsable) only when rules 1-3 hold.
AttentionCallFacts DescribeAttentionCall(const at::Tensor& q, const at::Tensor& k,
                                         const std::vector<AttentionSpan>& spans);

// SelectAttentionKernel(DescribeAttentionCall(q, k, spans)).
AttentionKernel ChooseAttentionKernel(const at::Tensor& q, const at::Tensor& k,
                                      const std::vector<AttentionSpan>& spans);

// Spans laid out as one varlen batch: batch element b holds the queries of
// the b-th non-empty span and its keys trimmed to q_len + causal_offset
// (rule 6), so flash's bottom-right causal mask is the span's mask.
struct VarlenPacking {
  std::vector<int64_t> q_rows;  // packed query i = row q_rows[i] of q
  std::vector<int64_t> k_rows;  // packed key j = row k_rows[j] of k/v
  std::vector<int32_t> cu_q;    // {0, q0, q0+q1, ...}
  std::vector<int32_t> cu_k;    // {0, k0, k0+k1, ...}
  int64_t max_q = 0;
  int64_t max_k = 0;
};
// REQUIRES: every span satisfies rule 6; lengths fit int32.
VarlenPacking PackSpansForVarlen(const std::vector<AttentionSpan>& spans);

// How libtorch lays out the flash varlen log-sum-exp: [Hq, total_q]
// (FlashAttention >= 2.6's unpadded form) or [B, Hq, max_q] (padded).
enum class FlashLseLayout { kHeadsByTokens, kBatchHeadsMaxQ };

// Flash's log-sum-exp (either layout, detected by rank) -> float32
// [total_q, Hq] in packed query order, and back.
at::Tensor FlashLseToRows(const at::Tensor& lse, const VarlenPacking& packing);
at::Tensor RowsToFlashLse(const at::Tensor& rows, const VarlenPacking& packing,
                          FlashLseLayout layout);

// CausalAttentionForward/Backward (attention.h) through one flash varlen
// call each: same arguments, same outputs (out, lse float32 rows; dq rows
// written, dk/dv ADDED, float32), no block sizes.
// REQUIRES: ChooseAttentionKernel(q, k, spans) == kFlashVarlen.
void FlashAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const std::vector<AttentionSpan>& spans, double scale, at::Tensor& out,
                           at::Tensor& lse);
void FlashAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                            const std::vector<AttentionSpan>& spans, double scale, at::Tensor& dq,
                            at::Tensor& dk, at::Tensor& dv);

// Causal attention over spans with the kernel ChooseAttentionKernel picks;
// the chunked one with `chunked` block sizes. Differentiable w.r.t. q, k, v;
// returns [Tq, Hq, D] in q's dtype. Same REQUIREMENTS as CausalAttention.
at::Tensor SelectedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const std::vector<AttentionSpan>& spans, double scale,
                                   const ChunkedAttentionOptions& chunked);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_FLASH_ATTENTION_H_
