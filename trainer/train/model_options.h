// model::ModelOptions from a job spec: the one place the training run and
// the profiler (trainer/dist/profile.cc) build them, so both build the same
// model for the same job.
#ifndef SKRULL_TRAINER_TRAIN_MODEL_OPTIONS_H_
#define SKRULL_TRAINER_TRAIN_MODEL_OPTIONS_H_

#include "api/job_spec.h"
#include "trainer/model/model.h"

namespace skrull::train {

// Options for the model of `job` on `device`: dtype bfloat16 when
// spec.training.precision is bf16 and `device` is CUDA, float32 otherwise
// (bf16 runs as float32 on CPU); spec.model.seed for the random init and the
// LoRA adapters; spec.model.lora when set; spec.training.recompute (full ->
// recompute_layers, selective -> recompute_mlp). Everything else keeps
// ModelOptions' defaults.
model::ModelOptions ModelOptionsFromSpec(const api::JobSpec& job, c10::Device device);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_MODEL_OPTIONS_H_
