#include "trainer/model/attention.h"

#include <ATen/ATen.h>

#include <cmath>

#include "common/status.h"
#include "trainer/model/flash_attention.h"
#include "trainer/model/torch_compat.h"

namespace skrull::model {

int64_t AttentionLayout::MaxLocalSeqlen() const {
  int64_t best = 0;
  for (size_t i = 1; i < cu_seqlens.size(); ++i) {
    best = std::max(best, cu_seqlens[i] - cu_seqlens[i - 1]);
  }
  return best;
}

AttentionLayout LocalLayout(std::vector<int64_t> cu_seqlens) {
  SKRULL_CHECK(!cu_seqlens.empty() && cu_seqlens.front() == 0)
      << "cu_seqlens must start at 0 (got " << cu_seqlens.size() << " entries)";
  for (size_t i = 1; i < cu_seqlens.size(); ++i) {
    SKRULL_CHECK(cu_seqlens[i] >= cu_seqlens[i - 1])
        << "cu_seqlens must be non-decreasing at index " << i;
  }
  AttentionLayout layout;
  layout.num_tokens = cu_seqlens.back();
  layout.cu_seqlens = std::move(cu_seqlens);
  return layout;
}

std::vector<AttentionSpan> LocalSpans(const AttentionLayout& layout) {
  std::vector<AttentionSpan> spans;
  for (size_t i = 1; i < layout.cu_seqlens.size(); ++i) {
    const int64_t begin = layout.cu_seqlens[i - 1];
    const int64_t len = layout.cu_seqlens[i] - begin;
    if (len > 0) spans.push_back(AttentionSpan{begin, len, begin, len, 0});
  }
  return spans;
}

std::vector<int64_t> FlattenSpans(const std::vector<AttentionSpan>& spans) {
  std::vector<int64_t> flat;
  flat.reserve(spans.size() * 5);
  for (const AttentionSpan& s : spans) {
    flat.insert(flat.end(), {s.q_begin, s.q_len, s.k_begin, s.k_len, s.causal_offset});
  }
  return flat;
}

std::vector<AttentionSpan> UnflattenSpans(const std::vector<int64_t>& flat) {
  std::vector<AttentionSpan> spans;
  for (size_t i = 0; i + 5 <= flat.size(); i += 5) {
    spans.push_back({flat[i], flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4]});
  }
  return spans;
}

namespace {

void CheckLocalInputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                      const AttentionLayout& layout) {
  SKRULL_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3) << "q/k/v must be [T, H, D]";
  SKRULL_CHECK(layout.num_tokens == q.size(0) && k.size(0) == q.size(0) && v.size(0) == q.size(0))
      << "layout has " << layout.num_tokens << " tokens, q/k/v " << q.size(0) << "/" << k.size(0)
      << "/" << v.size(0);
  SKRULL_CHECK(layout.NumLocalTokens() == q.size(0))
      << "a local attention backend got " << q.size(0) - layout.NumLocalTokens()
      << " tokens of distributed shards; wrap it in a context-parallel backend";
}

class ChunkedAttentionBackend : public AttentionBackend {
 public:
  explicit ChunkedAttentionBackend(ChunkedAttentionOptions options) : options_(options) {}

  at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const AttentionLayout& layout, int layer) override {
    CheckLocalInputs(q, k, v, layout);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    return CausalAttention(q, k, v, LocalSpans(layout), scale, options_.block_rows,
                           options_.max_block_elements);
  }

  std::string Name() const override { return "chunked"; }

 private:
  ChunkedAttentionOptions options_;
};

class SelectingAttentionBackend : public AttentionBackend {
 public:
  explicit SelectingAttentionBackend(ChunkedAttentionOptions chunked) : chunked_(chunked) {}

  at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const AttentionLayout& layout, int layer) override {
    CheckLocalInputs(q, k, v, layout);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    return SelectedCausalAttention(q, k, v, LocalSpans(layout), scale, chunked_);
  }

  std::string Name() const override {
    return compat::HasFlashVarlen() ? "flash-varlen|chunked" : "chunked";
  }

 private:
  ChunkedAttentionOptions chunked_;
};

}  // namespace

std::unique_ptr<AttentionBackend> MakeChunkedAttention(ChunkedAttentionOptions options) {
  return std::make_unique<ChunkedAttentionBackend>(options);
}

std::unique_ptr<AttentionBackend> MakeSelectingAttention(ChunkedAttentionOptions chunked) {
  return std::make_unique<SelectingAttentionBackend>(chunked);
}

std::unique_ptr<AttentionBackend> MakeDefaultAttention(c10::Device device) {
  if (device.is_cuda()) return MakeSelectingAttention();
  return MakeChunkedAttention();
}

}  // namespace skrull::model
