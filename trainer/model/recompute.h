// Activation recomputation ("gradient checkpointing") for one block.
#ifndef SKRULL_TRAINER_MODEL_RECOMPUTE_H_
#define SKRULL_TRAINER_MODEL_RECOMPUTE_H_

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace skrull::model {

using BlockFn = std::function<at::Tensor(const at::Tensor&)>;

// Returns fn(x) while keeping only x for backward: the forward runs without
// recording a graph, and backward runs fn(x) again with autograd on and
// backpropagates through it. `params` must list every tensor fn reads that
// may need a gradient (they receive gradients as if fn had run normally).
// REQUIRES: fn is deterministic (no dropout) and reads no tensor outside x
// and params that needs a gradient.
at::Tensor RecomputeInBackward(BlockFn fn, const at::Tensor& x,
                               const std::vector<at::Tensor>& params);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_RECOMPUTE_H_
