// Attention over a packed token stream: the one interface every attention
// implementation sits behind, and the implementations of this component.
//
// The stream holds, in order, the rank's whole ("local") sequences, each a
// full causal sequence, described by cu_seqlens = {0, l0, l0+l1, ...}.
// Attention never crosses a sequence boundary and there is no padding.
//
// Context parallelism (the next component, trainer/dist) extends this by
// appending shards of distributed sequences after the local tokens and
// wrapping a local backend: it starts the K/V exchange of the shards, calls
// the wrapped backend on the local prefix of q/k/v (which overlaps the
// exchange), then attends each shard's queries to the gathered K/V with
// CausalAttention() and a causal offset equal to the shard's global start.
//
// Thread safety: a backend is used by one training thread at a time.
#ifndef SKRULL_TRAINER_MODEL_ATTENTION_H_
#define SKRULL_TRAINER_MODEL_ATTENTION_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace skrull::model {

// What one call attends over. Built once per micro-batch and shared by all
// layers.
struct AttentionLayout {
  // Boundaries of the local sequences in the stream: {0, l0, l0+l1, ...}.
  // Local tokens are rows [0, cu_seqlens.back()).
  std::vector<int64_t> cu_seqlens;
  // Rows in q/k/v; equals cu_seqlens.back() until distributed shards exist.
  int64_t num_tokens = 0;

  int64_t NumLocalTokens() const { return cu_seqlens.empty() ? 0 : cu_seqlens.back(); }
  int64_t NumLocalSequences() const {
    return cu_seqlens.empty() ? 0 : static_cast<int64_t>(cu_seqlens.size()) - 1;
  }
  // Longest local sequence (0 when none).
  int64_t MaxLocalSeqlen() const;
};

// Builds the layout for a stream whose tokens are all local sequences.
// REQUIRES: cu_seqlens starts at 0, is non-decreasing.
AttentionLayout LocalLayout(std::vector<int64_t> cu_seqlens);

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;

  // Causal attention with scale 1/sqrt(D).
  //   q: [T, Hq, D]; k, v: [T, Hkv, D]; Hq a multiple of Hkv (GQA: query head
  //   h reads K/V head h / (Hq / Hkv), as Hugging Face's repeat_kv does).
  //   Returns [T, Hq, D] in q's dtype, differentiable w.r.t. q, k and v.
  // `layer` identifies the decoder layer (0-based) for backends that keep
  // per-layer state (communication handles, profiling). REQUIRES:
  // layout.num_tokens == T and, for local backends, NumLocalTokens() == T.
  virtual at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const AttentionLayout& layout, int layer) = 0;

  virtual std::string Name() const = 0;
};

// One rectangle of attention work: query rows [q_begin, q_begin + q_len) of q
// against key rows [k_begin, k_begin + k_len) of k/v, causal with an offset:
// query i (0-based in the span) sees key j (0-based in the span) iff
// j <= i + causal_offset. A whole local sequence is
// {s, L, s, L, 0}; a context-parallel query chunk starting at global position
// g against its sequence's gathered keys [0, S) is {row, n, 0, S, g}.
struct AttentionSpan {
  int64_t q_begin = 0;
  int64_t q_len = 0;
  int64_t k_begin = 0;
  int64_t k_len = 0;
  int64_t causal_offset = 0;
};

// Spans of the local sequences of `layout`.
std::vector<AttentionSpan> LocalSpans(const AttentionLayout& layout);

// Spans as 5 integers each (q_begin, q_len, k_begin, k_len, causal_offset),
// the form an autograd function can save, and back.
std::vector<int64_t> FlattenSpans(const std::vector<AttentionSpan>& spans);
std::vector<AttentionSpan> UnflattenSpans(const std::vector<int64_t>& flat);

// Memory-bounded causal attention over spans, with plain tensor ops on any
// device and a custom autograd function (recompute in backward, as
// FlashAttention does): it stores only q, k, v, the output and a float32
// log-sum-exp per query row and head, so memory is linear in tokens. The
// transient score block is Hq x rows x k_len float32 with rows =
// min(block_rows, max(1, max_block_elements / (Hq x k_len))), so its size is
// bounded whatever the sequence length (a few such blocks are live at once in
// backward). Computes in float32.
//   q: [Tq, Hq, D]; k, v: [Tk, Hkv, D]. Query rows in no span get 0 output
//   and 0 gradient. REQUIRES: spans' query ranges disjoint and in bounds,
//   causal_offset >= 0, block_rows >= 1, max_block_elements >= 1.
at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const std::vector<AttentionSpan>& spans, double scale,
                           int64_t block_rows = 512, int64_t max_block_elements = 1 << 25);

// CausalAttention's two passes without autograd, for callers that interleave
// other work (trainer/dist overlaps the CP exchange with local spans).
// Forward writes the rows of every span into out (float32 [Tq, Hq, D]) and
// lse (float32 [Tq, Hq], the log-sum-exp backward needs). Backward, given
// forward's out and lse and the output gradient dout, writes the dq rows of
// every span and ADDS the key/value gradients into dk, dv (float32, k's
// shape). Same REQUIREMENTS as CausalAttention (unchecked here).
void CausalAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const std::vector<AttentionSpan>& spans, double scale,
                            int64_t block_rows, int64_t max_block_elements, at::Tensor& out,
                            at::Tensor& lse);
void CausalAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                             const std::vector<AttentionSpan>& spans, double scale,
                             int64_t block_rows, int64_t max_block_elements, at::Tensor& dq,
                             at::Tensor& dk, at::Tensor& dv);

struct ChunkedAttentionOptions {
  // Query rows per block (at most).
  int64_t block_rows = 512;
  // Score-block budget in elements (float32): 2^25 = 128 MiB.
  int64_t max_block_elements = 1 << 25;
};

// The portable backend: CausalAttention over the local sequences.
std::unique_ptr<AttentionBackend> MakeChunkedAttention(ChunkedAttentionOptions options = {});

// Per call, the kernel model::SelectAttentionKernel picks
// (flash_attention.h): FlashAttention-2 varlen over all local sequences at
// once for bf16/fp16 on a GPU that supports it with libtorch >= 2.6, else
// the chunked path with `chunked`'s block sizes.
std::unique_ptr<AttentionBackend> MakeSelectingAttention(ChunkedAttentionOptions chunked = {});

// The backend for `device`: the selecting one on CUDA, chunked elsewhere.
std::unique_ptr<AttentionBackend> MakeDefaultAttention(c10::Device device);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_ATTENTION_H_
