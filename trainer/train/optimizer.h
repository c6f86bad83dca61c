// Optimizer: AdamW (torch::optim::AdamW, decoupled weight decay) over the
// model's trainable parameters, with global-norm gradient clipping and its
// state on disk.
//
// Parameter groups: tensors with fewer than 2 dimensions (norm weights,
// biases) get no weight decay; matrices (projections, embeddings, LM head,
// LoRA A/B) get spec.training.weightDecay.
//
// Mixed precision: a parameter that is not float32 (a bf16 model on CUDA)
// gets a float32 master copy. ReducibleGradients() hands out float32
// gradients (the masters'), AdamW updates the masters, and each model
// parameter receives its rounded master after the step. The gradients of a
// step's micro-batches are summed in float32, not in the parameter's dtype:
// AccumulateGradient(i), called after each backward (GradReadyHooks'
// accumulate callback), adds the parameter's own bf16 .grad into the
// master's float32 .grad and frees it, so each bf16 gradient is rounded only
// where backward produced it (docs/architecture.md, "Gradient precision").
//
// Per step: backward (accumulates into the model's .grad; with the
// accumulate callback, into the masters' float32 .grad) ->
// ReducibleGradients() -> all-reduce them in place -> Step(lr).
//
// State on disk (in a checkpoint folder):
//   optimizer.safetensors  "<param>.exp_avg" and "<param>.exp_avg_sq" in
//                          float32, Hugging Face parameter names; plus
//                          "<param>.master" for mixed-precision parameters
//   optimizer.json         {"schema", "type": "AdamW", "hyper_parameters",
//                           "steps": {"<param>": <AdamW step counter>}}
//
// Thread safety: one training thread.
#ifndef SKRULL_TRAINER_TRAIN_OPTIMIZER_H_
#define SKRULL_TRAINER_TRAIN_OPTIMIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/model/model.h"

namespace torch::optim {
class AdamW;
}  // namespace torch::optim

namespace skrull::train {

struct OptimizerOptions {
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double epsilon = 1e-8;
  double grad_clip = 1.0;  // max global L2 norm; 0 disables clipping
};

OptimizerOptions OptimizerOptionsFromSpec(const api::TrainingSpec& training);

// Adds `grad` (what backward accumulated in a bf16 .grad) into the float32
// `sum` (made on the first call) and releases `grad`, so the next backward
// starts a fresh bf16 gradient: the float32 summation of micro-batches that
// Optimizer and ZeroOptimizer::AccumulateGradient share. No-op when `grad`
// is undefined.
void AddIntoFloat32Sum(at::Tensor& grad, at::Tensor& sum);

// optimizer.json's "hyper_parameters" object (also ZeroOptimizer's), as text.
std::string HyperParametersJson(const OptimizerOptions& options);

class Optimizer {
 public:
  // `params` are the model's trainable parameters (names for checkpoints).
  // REQUIRES: every tensor requires grad; names unique.
  Optimizer(std::vector<model::NamedTensor> params, const OptimizerOptions& options);
  ~Optimizer();

  // Adds what backward accumulated in params()[i]'s own .grad since the last
  // call into its float32 gradient (the master's .grad) and frees the
  // former. No-op for a float32 parameter (its .grad is its float32
  // gradient) or when it has no .grad. Runs on the thread that runs
  // backward; throws what libtorch throws (an out-of-memory error).
  void AccumulateGradient(size_t i);

  // The float32 gradient of every trainable parameter, in params() order,
  // defined even where backward produced none (zeros), so every rank
  // all-reduces the same tensors. Reduce them in place before Step().
  std::vector<at::Tensor> ReducibleGradients();
  // The same for params()[i] alone: its float32 gradient (for a mixed
  // precision parameter, the master's .grad after AccumulateGradient(i)),
  // to be reduced in place. What a GradientReducer calls
  // when parameter i's gradient is final (trainer.cc), so bf16 models
  // overlap the reduction with backward too.
  at::Tensor ReducibleGradient(size_t i);
  // The float32 tensors whose .grad ReducibleGradient(s) hand out, in
  // params() order (the parameter itself when it is float32).
  const std::vector<at::Tensor>& reducible_tensors() const { return masters_; }

  // Global L2 norm of the reducible gradients, float64 on the host.
  double GradNorm() const;

  // One update: clips the reducible gradients to options.grad_clip by their
  // global norm, sets the learning rate to `lr`, runs AdamW, copies masters
  // into the model, zeroes the model's gradients. Returns the norm before
  // clipping. REQUIRES: ReducibleGradients() (or ReducibleGradient(i) for
  // every i) was called since the last backward, and its tensors were
  // reduced over all ranks (so every rank takes the same step).
  double Step(double lr);

  // Zeroes the model's gradients and the float32 sums of mixed-precision
  // parameters.
  void ZeroGrad();

  // Bytes held between steps: the parameters, their gradients, float32
  // masters of mixed-precision parameters and AdamW's two moments.
  int64_t StaticMemoryBytes() const;

  // Writes optimizer.safetensors and optimizer.json into `dir`.
  Status Save(const std::string& dir) const;
  // Reads them back. InvalidArgument naming the file and tensor when a
  // parameter is missing or has another shape (the checkpoint belongs to
  // another model or LoRA setting).
  Status Load(const std::string& dir);

  const std::vector<model::NamedTensor>& params() const { return params_; }

 private:
  bool mixed(size_t i) const { return !masters_[i].is_same(params_[i].second); }

  std::vector<model::NamedTensor> params_;
  std::vector<at::Tensor> masters_;  // float32; the parameter itself when it is float32
  OptimizerOptions options_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
};

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_OPTIMIZER_H_
