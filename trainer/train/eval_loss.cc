#include "trainer/train/eval_loss.h"

#include <torch/torch.h>

#include <algorithm>

#include "scheduler/micro_batch_builder.h"
#include "trainer/model/torch_compat.h"

namespace skrull::train {

StatusOr<RankStepWork> ForwardLossSum(model::DecoderModel* model, const scheduler::Plan& plan,
                                      const std::vector<scheduler::SequenceTokens>& batch,
                                      int dp_rank, int cp_rank,
                                      ContextParallelAttention* cp_attention) {
  SKRULL_CHECK(plan.topology.cp == 1 || cp_attention != nullptr)
      << "cp=" << plan.topology.cp << " needs a context-parallel attention backend";
  SKRULL_ASSIGN_OR_RETURN(std::vector<scheduler::RankStream> streams,
                          scheduler::BuildRankStreams(plan, batch, dp_rank, cp_rank));
  torch::NoGradGuard no_grad;
  const c10::Device device = model->options().device;
  at::Tensor total = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  RankStepWork work;
  const auto& micro_batches = plan.ranks[dp_rank].micro_batches;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (micro_batches[i].empty()) continue;
    if (cp_attention != nullptr) SKRULL_RETURN_IF_ERROR(cp_attention->BeginMicroBatch(streams[i]));
    total += model->LossSum(ToPackedBatch(streams[i], device)).to(torch::kDouble);
    ++work.micro_batches;
    work.tokens += streams[i].tokens;
    work.label_tokens += streams[i].label_tokens;
  }
  work.loss_sum = total.item<double>();
  return work;
}

EvalSet::EvalSet(std::unique_ptr<data::DataMixture> data, int64_t max_sequences,
                 int64_t global_batch)
    : data_(std::move(data)), global_batch_(global_batch) {
  SKRULL_CHECK(global_batch_ >= 1);
  count_ = max_sequences > 0 ? std::min(max_sequences, data_->size()) : data_->size();
  for (int64_t i = 0; i < count_; ++i) label_tokens_ += data_->LabelTokenCount(i);
}

StatusOr<double> EvalSet::ChunkLossSum(const EvalContext& ctx, int64_t first, int64_t end) const {
  std::vector<scheduler::Sequence> sequences;
  for (int64_t i = first; i < end; ++i) sequences.push_back({i - first, data_->Length(i)});
  StatusOr<scheduler::Plan> planned =
      scheduler::Schedule(ctx.policy, sequences, ctx.schedule, *ctx.cost);
  if (!planned.ok()) return planned.status().WithContext("spec.data.eval");
  scheduler::Plan plan = std::move(planned).value();
  std::vector<data::Sample> samples(sequences.size());
  std::vector<scheduler::SequenceTokens> tokens(sequences.size());
  for (int64_t id : scheduler::NeededSequenceIds(plan, ctx.dp_rank, ctx.cp_rank)) {
    SKRULL_ASSIGN_OR_RETURN(samples[id], data_->Get(first + id));
    tokens[id] = {samples[id].input_ids.data(), samples[id].targets.data(),
                  static_cast<int64_t>(samples[id].input_ids.size())};
  }
  SKRULL_ASSIGN_OR_RETURN(RankStepWork work, ForwardLossSum(ctx.model, plan, tokens, ctx.dp_rank,
                                                            ctx.cp_rank, ctx.cp_attention));
  return work.loss_sum;
}

StatusOr<double> EvalSet::Evaluate(const EvalContext& ctx) const {
  double loss_sum = 0;
  for (int64_t first = 0; first < count_; first += global_batch_) {
    SKRULL_ASSIGN_OR_RETURN(double chunk,
                            ChunkLossSum(ctx, first, std::min(count_, first + global_batch_)));
    loss_sum += chunk;
  }
  std::vector<double> sum = {loss_sum};
  SKRULL_RETURN_IF_ERROR(ctx.collectives->AllReduceSum(&sum));
  return sum[0] / static_cast<double>(std::max<int64_t>(1, label_tokens_));
}

}  // namespace skrull::train
