#include "trainer/model/recompute.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include "common/status.h"
#include "trainer/model/torch_custom_function.h"

namespace skrull::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Carries the block function through ctx->saved_data.
struct BlockHolder : torch::CustomClassHolder {
  explicit BlockHolder(BlockFn f) : fn(std::move(f)) {}
  BlockFn fn;
};

class RecomputeFunction : public torch::autograd::Function<RecomputeFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList params,
                            c10::intrusive_ptr<BlockHolder> holder) {
    at::Tensor out = holder->fn(x);  // grad mode is off inside forward
    ctx->save_for_backward({x});
    ctx->saved_data["params"] = params.vec();
    ctx->saved_data["block"] = c10::IValue::make_capsule(holder);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const std::vector<at::Tensor> params = ctx->saved_data["params"].toTensorVector();
    auto holder =
        c10::static_intrusive_pointer_cast<BlockHolder>(ctx->saved_data["block"].toCapsule());
    const bool need_x = ctx->needs_input_grad(0);
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(need_x);
    at::Tensor out;
    {
      at::AutoGradMode enable(true);
      out = holder->fn(x);
    }
    variable_list inputs;
    std::vector<size_t> slots;  // index into the returned list
    if (need_x) {
      inputs.push_back(x);
      slots.push_back(0);
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].requires_grad() && ctx->needs_input_grad(i + 1)) {
        inputs.push_back(params[i]);
        slots.push_back(i + 1);
      }
    }
    variable_list result(params.size() + 2);
    if (inputs.empty()) return result;
    variable_list grads = torch::autograd::grad({out}, inputs, {grad_outputs[0]},
                                                /*retain_graph=*/false, /*create_graph=*/false,
                                                /*allow_unused=*/true);
    for (size_t i = 0; i < slots.size(); ++i) result[slots[i]] = grads[i];
    return result;
  }
};

}  // namespace

at::Tensor RecomputeInBackward(BlockFn fn, const at::Tensor& x,
                               const std::vector<at::Tensor>& params) {
  return RecomputeFunction::apply(x, at::TensorList(params),
                                  c10::make_intrusive<BlockHolder>(std::move(fn)));
}

}  // namespace skrull::model
