#include "trainer/dist/bf16_sum.h"

#include <ATen/ATen.h>

#include <vector>

#include "trainer/dist/cp_exchange.h"

namespace skrull::dist {

namespace {

void CheckBf16(const at::Tensor& t, const char* what) {
  SKRULL_CHECK(t.scalar_type() == at::kBFloat16 && t.is_contiguous())
      << what << " must be contiguous bf16 (got " << t.scalar_type() << ")";
}

// The same bytes as fp16, a type Gloo moves (never adds: the values are
// meaningless as fp16).
at::Tensor Payload(const at::Tensor& bf16) { return bf16.view(at::kHalf); }

}  // namespace

PendingCollective StartBf16AllReduceSum(Group& group, const at::Tensor& tensor) {
  CheckBf16(tensor, "bf16 all-reduce tensor");
  if (group.size == 1 || group.backend != CommBackend::kGloo) {
    return StartAllReduceSum(group, tensor);
  }
  // Every rank's values, then the sum of the rows here.
  const int64_t n = tensor.numel();
  at::Tensor gathered = at::empty({group.size, n}, tensor.options());
  std::vector<at::Tensor> inputs = {Payload(tensor.view({-1}))};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < group.size; ++r) outputs[0].push_back(Payload(gathered[r]));
  const int64_t bytes = TensorBytes(gathered);
  auto work = SKRULL_C10D_CHECK(group, "allgather (bf16 all-reduce)", bytes,
                                group.pg->allgather(outputs, inputs));
  at::Tensor flat = tensor.view({-1});
  auto finish = [gathered, flat]() mutable { at::sum_out(flat, gathered, 0); };
  return PendingCollective(&group, "allgather (bf16 all-reduce)", bytes, std::move(work),
                           std::move(finish));
}

PendingCollective StartBf16ReduceScatterSum(Group& group, const at::Tensor& input,
                                            const at::Tensor& out) {
  CheckBf16(input, "bf16 reduce-scatter input");
  CheckBf16(out, "bf16 reduce-scatter output");
  if (group.size == 1 || group.backend != CommBackend::kGloo) {
    return StartReduceScatterSum(group, input, out);
  }
  SKRULL_CHECK(input.numel() == group.size * out.numel())
      << "bf16 reduce-scatter on " << group.Describe() << ": input " << input.numel()
      << " != " << group.size << " x " << out.numel();
  // All-to-all sends block r to rank r; then the received blocks are summed.
  at::Tensor recv = at::empty({group.size, out.numel()}, input.options());
  std::vector<int64_t> splits;  // empty = equal splits
  const int64_t bytes = TensorBytes(input);
  at::Tensor send = Payload(input.view({-1}));
  at::Tensor received = Payload(recv.view({-1}));
  auto work = SKRULL_C10D_CHECK(group, "alltoall (bf16 reduce-scatter)", bytes,
                                group.pg->alltoall_base(received, send, splits, splits));
  at::Tensor flat = out.view({-1});
  auto finish = [recv, flat]() mutable { at::sum_out(flat, recv, 0); };
  return PendingCollective(&group, "alltoall (bf16 reduce-scatter)", bytes, std::move(work),
                           std::move(finish));
}

}  // namespace skrull::dist
