#include "trainer/train/model_options.h"

namespace skrull::train {

model::ModelOptions ModelOptionsFromSpec(const api::JobSpec& job, c10::Device device) {
  model::ModelOptions o;
  o.device = device;
  o.dtype = device.is_cuda() && job.training.precision == api::Precision::kBf16 ? c10::kBFloat16
                                                                                : c10::kFloat;
  o.seed = job.model.seed;
  o.recompute_layers = job.training.recompute == api::Recompute::kFull;
  o.recompute_mlp = job.training.recompute == api::Recompute::kSelective;
  if (job.model.lora.has_value()) {
    o.lora.rank = job.model.lora->rank;
    o.lora.alpha = job.model.lora->alpha;
    o.lora.target_modules = job.model.lora->target_modules;
    o.lora.seed = job.model.seed;
  }
  return o;
}

}  // namespace skrull::train
