// The flash path packs the spans' rows into one varlen batch (queries
// gathered, keys gathered and trimmed; a context-parallel rank's two query
// chunks of one sequence share key prefixes, so keys may be copied twice),
// calls ATen's kernel once, and scatters the results back to stream rows.
#include "trainer/model/flash_attention.h"

#include <ATen/ATen.h>

#include <atomic>
#include <limits>

#include "common/status.h"
#include "trainer/model/torch_compat.h"
#include "trainer/model/torch_custom_function.h"

namespace skrull::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kMaxFlashHeadDim = 256;  // FlashAttention-2's largest head dim
constexpr int64_t kFlashHeadDimMultiple = 8;

bool IsHalfPrecision(c10::ScalarType t) { return t == c10::kBFloat16 || t == c10::kHalf; }

// Rows of a packed operand: a contiguous range (narrow, no copy) or a list.
class RowSet {
 public:
  RowSet(const std::vector<int64_t>& rows, c10::Device device) : n_(rows.size()) {
    first_ = rows.empty() ? 0 : rows.front();
    contiguous_ = true;
    for (size_t i = 1; i < rows.size() && contiguous_; ++i)
      contiguous_ = rows[i] == rows[i - 1] + 1;
    if (!contiguous_) index_ = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
  }
  at::Tensor Gather(const at::Tensor& x) const {
    return contiguous_ ? x.narrow(0, first_, n_) : x.index_select(0, index_);
  }
  void CopyInto(at::Tensor& dst, const at::Tensor& src) const {
    if (contiguous_) {
      dst.narrow(0, first_, n_).copy_(src);
    } else {
      dst.index_copy_(0, index_, src);
    }
  }
  void AddInto(at::Tensor& dst, const at::Tensor& src) const {
    if (contiguous_) {
      dst.narrow(0, first_, n_).add_(src);
    } else {
      dst.index_add_(0, index_, src);
    }
  }

 private:
  int64_t n_;
  int64_t first_ = 0;
  bool contiguous_ = true;
  at::Tensor index_;
};

// The operands of one flash call.
struct PackedCall {
  VarlenPacking packing;
  RowSet q_rows, k_rows;
  at::Tensor q, k, v;     // contiguous, q's dtype
  at::Tensor cu_q, cu_k;  // int32 on the device

  PackedCall(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
             const std::vector<AttentionSpan>& spans)
      : packing(PackSpansForVarlen(spans)),
        q_rows(packing.q_rows, q_in.device()),
        k_rows(packing.k_rows, q_in.device()) {
    q = q_rows.Gather(q_in).contiguous();
    k = k_rows.Gather(k_in).to(q_in.scalar_type()).contiguous();
    v = k_rows.Gather(v_in).to(q_in.scalar_type()).contiguous();
    auto i32 = at::TensorOptions().dtype(at::kInt);
    cu_q = at::tensor(packing.cu_q, i32).to(q_in.device());
    cu_k = at::tensor(packing.cu_k, i32).to(q_in.device());
  }
  bool empty() const { return packing.cu_q.size() < 2; }
};

// The layout this libtorch's flash forward returned (a property of the
// build); backward, which always follows a forward, rebuilds it.
std::atomic<int> g_lse_layout{-1};

FlashLseLayout DetectLayout(const at::Tensor& lse) {
  SKRULL_CHECK(lse.dim() == 2 || lse.dim() == 3)
      << "flash log-sum-exp of shape " << lse.sizes() << " on libtorch " << compat::TorchVersion()
      << ": expected [Hq, total_q] or [B, Hq, max_q]";
  return lse.dim() == 2 ? FlashLseLayout::kHeadsByTokens : FlashLseLayout::kBatchHeadsMaxQ;
}

// Packed row i of batch b -> b * max_q + (i - cu_q[b]) (the padded layout).
at::Tensor PaddedIndex(const VarlenPacking& p, c10::Device device) {
  std::vector<int64_t> idx;
  idx.reserve(p.q_rows.size());
  for (size_t b = 1; b < p.cu_q.size(); ++b) {
    for (int32_t i = 0; i < p.cu_q[b] - p.cu_q[b - 1]; ++i) {
      idx.push_back(static_cast<int64_t>(b - 1) * p.max_q + i);
    }
  }
  return at::tensor(idx, at::TensorOptions().dtype(at::kLong)).to(device);
}

class FlashAttentionFunction : public torch::autograd::Function<FlashAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, std::vector<int64_t> flat, double scale) {
    const std::vector<AttentionSpan> spans = UnflattenSpans(flat);
    at::Tensor out = at::zeros(q.sizes(), q.options().dtype(at::kFloat));
    at::Tensor lse = at::zeros({q.size(0), q.size(1)}, q.options().dtype(at::kFloat));
    FlashAttentionForward(q, k, v, spans, scale, out, lse);
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["spans"] = flat;
    ctx->saved_data["scale"] = scale;
    return out.to(q.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& q = saved[0];
    const at::Tensor& k = saved[1];
    const at::Tensor& v = saved[2];
    const std::vector<AttentionSpan> spans = UnflattenSpans(ctx->saved_data["spans"].toIntVector());
    at::Tensor dq = at::zeros(q.sizes(), q.options().dtype(at::kFloat));
    at::Tensor dk = at::zeros(k.sizes(), k.options().dtype(at::kFloat));
    at::Tensor dv = at::zeros(v.sizes(), v.options().dtype(at::kFloat));
    FlashAttentionBackward(q, k, v, saved[3], saved[4], grad_outputs[0], spans,
                           ctx->saved_data["scale"].toDouble(), dq, dk, dv);
    return {dq.to(q.scalar_type()), dk.to(k.scalar_type()), dv.to(v.scalar_type()), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

std::string AttentionKernelName(AttentionKernel kernel) {
  return kernel == AttentionKernel::kFlashVarlen ? "flash-varlen" : "chunked";
}

AttentionKernel SelectAttentionKernel(const AttentionCallFacts& f) {
  const bool head_shape_ok = f.head_dim > 0 && f.head_dim % kFlashHeadDimMultiple == 0 &&
                             f.head_dim <= kMaxFlashHeadDim && f.kv_heads > 0 &&
                             f.q_heads % f.kv_heads == 0;
  const bool single_query_gqa = f.max_q_len == 1 && f.q_heads != f.kv_heads;
  if (f.flash_built && f.on_cuda && IsHalfPrecision(f.dtype) && f.flash_supported &&
      head_shape_ok && f.spans_bottom_right && !single_query_gqa) {
    return AttentionKernel::kFlashVarlen;
  }
  return AttentionKernel::kChunked;
}

AttentionCallFacts DescribeAttentionCall(const at::Tensor& q, const at::Tensor& k,
                                         const std::vector<AttentionSpan>& spans) {
  AttentionCallFacts f;
  f.flash_built = compat::HasFlashVarlen();
  f.on_cuda = q.is_cuda() && k.is_cuda();
  f.dtype = q.scalar_type() == k.scalar_type() ? q.scalar_type() : c10::kFloat;
  f.head_dim = q.dim() == 3 ? q.size(2) : 0;
  f.q_heads = q.dim() == 3 ? q.size(1) : 0;
  f.kv_heads = k.dim() == 3 ? k.size(1) : 0;
  for (const AttentionSpan& s : spans) {
    if (s.q_len == 0) continue;
    f.spans_bottom_right = f.spans_bottom_right && s.k_len >= s.q_len + s.causal_offset;
    f.max_q_len = std::max(f.max_q_len, s.q_len);
  }
  if (f.flash_built && f.on_cuda && IsHalfPrecision(f.dtype)) {
    f.flash_supported = compat::FlashKernelUsable(q, f.q_heads);
  }
  return f;
}

AttentionKernel ChooseAttentionKernel(const at::Tensor& q, const at::Tensor& k,
                                      const std::vector<AttentionSpan>& spans) {
  return SelectAttentionKernel(DescribeAttentionCall(q, k, spans));
}

VarlenPacking PackSpansForVarlen(const std::vector<AttentionSpan>& spans) {
  VarlenPacking p;
  p.cu_q.push_back(0);
  p.cu_k.push_back(0);
  for (const AttentionSpan& s : spans) {
    if (s.q_len == 0) continue;
    const int64_t keys = s.q_len + s.causal_offset;
    SKRULL_CHECK(s.k_len >= keys) << "span with " << s.q_len << " queries, causal offset "
                                  << s.causal_offset << " and only " << s.k_len << " keys";
    SKRULL_CHECK(p.q_rows.size() + s.q_len <= std::numeric_limits<int32_t>::max() &&
                 p.k_rows.size() + keys <= std::numeric_limits<int32_t>::max())
        << "varlen batch over int32 rows";
    for (int64_t i = 0; i < s.q_len; ++i) p.q_rows.push_back(s.q_begin + i);
    for (int64_t j = 0; j < keys; ++j) p.k_rows.push_back(s.k_begin + j);
    p.cu_q.push_back(static_cast<int32_t>(p.q_rows.size()));
    p.cu_k.push_back(static_cast<int32_t>(p.k_rows.size()));
    p.max_q = std::max(p.max_q, s.q_len);
    p.max_k = std::max(p.max_k, keys);
  }
  return p;
}

at::Tensor FlashLseToRows(const at::Tensor& lse, const VarlenPacking& packing) {
  if (DetectLayout(lse) == FlashLseLayout::kHeadsByTokens) return lse.t().to(at::kFloat);
  SKRULL_CHECK(lse.size(2) == packing.max_q)
      << "padded flash log-sum-exp " << lse.sizes() << ", longest query span " << packing.max_q;
  at::Tensor by_row = lse.permute({0, 2, 1}).reshape({-1, lse.size(1)});
  return by_row.index_select(0, PaddedIndex(packing, lse.device())).to(at::kFloat);
}

at::Tensor RowsToFlashLse(const at::Tensor& rows, const VarlenPacking& packing,
                          FlashLseLayout layout) {
  if (layout == FlashLseLayout::kHeadsByTokens) return rows.t().contiguous();
  const int64_t batch = static_cast<int64_t>(packing.cu_q.size()) - 1;
  const int64_t heads = rows.size(1);
  at::Tensor padded = at::zeros({batch * packing.max_q, heads}, rows.options());
  padded.index_copy_(0, PaddedIndex(packing, rows.device()), rows);
  return padded.view({batch, packing.max_q, heads}).permute({0, 2, 1}).contiguous();
}

void FlashAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const std::vector<AttentionSpan>& spans, double scale, at::Tensor& out,
                           at::Tensor& lse) {
  const PackedCall call(q, k, v, spans);
  if (call.empty()) return;
  const VarlenPacking& p = call.packing;
  compat::FlashVarlenOutput r = compat::FlashVarlenForward(call.q, call.k, call.v, call.cu_q,
                                                           call.cu_k, p.max_q, p.max_k, scale);
  g_lse_layout.store(static_cast<int>(DetectLayout(r.lse)));
  call.q_rows.CopyInto(out, r.out.to(at::kFloat));
  call.q_rows.CopyInto(lse, FlashLseToRows(r.lse, p));
}

void FlashAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                            const std::vector<AttentionSpan>& spans, double scale, at::Tensor& dq,
                            at::Tensor& dk, at::Tensor& dv) {
  const PackedCall call(q, k, v, spans);
  if (call.empty()) return;
  const int layout = g_lse_layout.load();
  SKRULL_CHECK(layout >= 0) << "flash attention backward before any flash forward";
  const VarlenPacking& p = call.packing;
  const c10::ScalarType dtype = q.scalar_type();
  at::Tensor out_p = call.q_rows.Gather(out).to(dtype).contiguous();
  at::Tensor dout_p = call.q_rows.Gather(dout).to(dtype).contiguous();
  at::Tensor lse_p = RowsToFlashLse(call.q_rows.Gather(lse).to(at::kFloat), p,
                                    static_cast<FlashLseLayout>(layout));
  // Dropout is 0, so the kernel never reads the RNG state: empty CPU
  // scalars, as libtorch's forward returns them without dropout.
  at::Tensor no_rng = at::empty({}, at::TensorOptions().dtype(at::kLong));
  auto [dq_p, dk_p, dv_p] =
      compat::FlashVarlenBackward(dout_p, call.q, call.k, call.v, out_p, lse_p, call.cu_q,
                                  call.cu_k, p.max_q, p.max_k, scale, no_rng, no_rng);
  call.q_rows.CopyInto(dq, dq_p.to(at::kFloat));
  call.k_rows.AddInto(dk, dk_p.to(at::kFloat));
  call.k_rows.AddInto(dv, dv_p.to(at::kFloat));
}

at::Tensor SelectedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const std::vector<AttentionSpan>& spans, double scale,
                                   const ChunkedAttentionOptions& chunked) {
  if (ChooseAttentionKernel(q, k, spans) == AttentionKernel::kChunked) {
    return CausalAttention(q, k, v, spans, scale, chunked.block_rows, chunked.max_block_elements);
  }
  return FlashAttentionFunction::apply(q, k, v, FlattenSpans(spans), scale);
}

}  // namespace skrull::model
