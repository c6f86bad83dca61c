#include "trainer/train/train_step.h"

#include <torch/torch.h>

#include <algorithm>

namespace skrull::train {

namespace {

at::Tensor ToLongTensor(const std::vector<int64_t>& v, c10::Device device) {
  at::Tensor t = torch::empty({static_cast<int64_t>(v.size())}, torch::kLong);
  if (!v.empty()) std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return device.is_cpu() ? t : t.to(device, /*non_blocking=*/false);
}

}  // namespace

model::PackedBatch ToPackedBatch(const RankStream& stream, c10::Device device) {
  model::PackedBatch b;
  b.input_ids = ToLongTensor(stream.input_ids, device);
  b.position_ids = ToLongTensor(stream.positions, device);
  b.targets = ToLongTensor(stream.targets, device);
  b.cu_seqlens = stream.local_cu_seqlens;
  return b;
}

StatusOr<RankStepWork> AccumulateGradients(model::DecoderModel* model, const scheduler::Plan& plan,
                                           const std::vector<SequenceTokens>& batch, int dp_rank,
                                           int cp_rank, int64_t global_label_tokens,
                                           ContextParallelAttention* cp_attention) {
  SKRULL_CHECK(global_label_tokens > 0) << "global_label_tokens=" << global_label_tokens;
  SKRULL_CHECK(plan.topology.cp == 1 || cp_attention != nullptr)
      << "cp=" << plan.topology.cp << " needs a context-parallel attention backend";
  SKRULL_ASSIGN_OR_RETURN(std::vector<RankStream> streams,
                          BuildRankStreams(plan, batch, dp_rank, cp_rank));
  const c10::Device device = model->options().device;
  const double inv_labels = 1.0 / static_cast<double>(global_label_tokens);
  RankStepWork work;
  at::Tensor loss_total =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  const auto& micro_batches = plan.ranks[dp_rank].micro_batches;
  for (size_t i = 0; i < streams.size(); ++i) {
    // Skip only what is empty in the plan: that is the same on every CP rank,
    // so context-parallel exchanges stay in lockstep.
    if (micro_batches[i].empty()) continue;
    const RankStream& stream = streams[i];
    if (cp_attention != nullptr) SKRULL_RETURN_IF_ERROR(cp_attention->BeginMicroBatch(stream));
    model::PackedBatch packed = ToPackedBatch(stream, device);
    at::Tensor loss_sum = model->LossSum(packed);
    // With context parallelism every CP rank must run backward (it carries
    // the dK/dV exchange), even one whose shard holds no label.
    SKRULL_CHECK(cp_attention == nullptr || loss_sum.requires_grad())
        << "micro-batch " << i << " on cp_rank " << cp_rank << ": the loss has no graph";
    if (loss_sum.requires_grad()) (loss_sum * inv_labels).backward();
    loss_total += loss_sum.detach().to(torch::kDouble);
    ++work.micro_batches;
    work.tokens += stream.tokens;
    work.label_tokens += stream.label_tokens;
    work.rank_tokens_peak = std::max(work.rank_tokens_peak, stream.tokens);
    work.local_sequences += static_cast<int64_t>(stream.local_seq_ids.size());
    work.distributed_sequences += static_cast<int64_t>(stream.distributed.size());
  }
  work.loss_sum = loss_total.item<double>();
  return work;
}

}  // namespace skrull::train
