#include "trainer/dist/cp_exchange.h"

#include <ATen/ATen.h>

#include <vector>

namespace skrull::dist {

const char* ExchangeMethodName(ExchangeMethod method) {
  switch (method) {
    case ExchangeMethod::kLocalCopy:
      return "local copy";
    case ExchangeMethod::kNcclAllGatherBase:
      return "nccl _allgather_base";
    case ExchangeMethod::kGlooAllGatherList:
      return "gloo allgather";
    case ExchangeMethod::kNcclReduceScatterBase:
      return "nccl _reduce_scatter_base";
    case ExchangeMethod::kGlooAllToAllSum:
      return "gloo alltoall + sum";
  }
  return "?";
}

ExchangeMethod AllGatherMethodFor(const Group& group) {
  if (group.size == 1) return ExchangeMethod::kLocalCopy;
  return group.backend == CommBackend::kNccl ? ExchangeMethod::kNcclAllGatherBase
                                             : ExchangeMethod::kGlooAllGatherList;
}

ExchangeMethod ReduceScatterMethodFor(const Group& group) {
  if (group.size == 1) return ExchangeMethod::kLocalCopy;
  return group.backend == CommBackend::kNccl ? ExchangeMethod::kNcclReduceScatterBase
                                             : ExchangeMethod::kGlooAllToAllSum;
}

PendingCollective StartAllGather(Group& group, const at::Tensor& input, const at::Tensor& out) {
  SKRULL_CHECK(out.size(0) == group.size * input.size(0))
      << "allgather on " << group.Describe() << ": output rows " << out.size(0)
      << " != " << group.size << " x " << input.size(0);
  SKRULL_CHECK(input.is_contiguous() && out.is_contiguous());
  const int64_t bytes = TensorBytes(out);
  at::Tensor in = input;
  at::Tensor o = out;
  switch (AllGatherMethodFor(group)) {
    case ExchangeMethod::kLocalCopy:
      o.copy_(in);
      return PendingCollective();
    case ExchangeMethod::kNcclAllGatherBase: {
      auto work = SKRULL_C10D_CHECK(group, "_allgather_base", bytes,
                                    group.pg->_allgather_base(o, in, c10d::AllgatherOptions()));
      return PendingCollective(&group, "_allgather_base", bytes, std::move(work));
    }
    default:
      break;
  }
  std::vector<at::Tensor> inputs = {in};
  std::vector<std::vector<at::Tensor>> outputs(1);
  const int64_t n = in.size(0);
  for (int r = 0; r < group.size; ++r) outputs[0].push_back(o.narrow(0, r * n, n));
  auto work = SKRULL_C10D_CHECK(group, "allgather", bytes, group.pg->allgather(outputs, inputs));
  return PendingCollective(&group, "allgather", bytes, std::move(work));
}

PendingCollective StartReduceScatterSum(Group& group, const at::Tensor& input,
                                        const at::Tensor& out) {
  SKRULL_CHECK(input.size(0) == group.size * out.size(0))
      << "reduce-scatter on " << group.Describe() << ": input rows " << input.size(0)
      << " != " << group.size << " x " << out.size(0);
  SKRULL_CHECK(input.is_contiguous() && out.is_contiguous());
  const int64_t bytes = TensorBytes(input);
  at::Tensor in = input;
  at::Tensor o = out;
  switch (ReduceScatterMethodFor(group)) {
    case ExchangeMethod::kLocalCopy:
      o.copy_(in);
      return PendingCollective();
    case ExchangeMethod::kNcclReduceScatterBase: {
      auto work =
          SKRULL_C10D_CHECK(group, "_reduce_scatter_base", bytes,
                            group.pg->_reduce_scatter_base(o, in, c10d::ReduceScatterOptions()));
      return PendingCollective(&group, "_reduce_scatter_base", bytes, std::move(work));
    }
    default:
      break;
  }
  // Gloo: all-to-all sends block r to rank r; then sum the received blocks.
  at::Tensor recv = at::empty_like(in);
  std::vector<int64_t> splits;  // empty = equal splits
  auto work = SKRULL_C10D_CHECK(group, "alltoall (reduce-scatter)", bytes,
                                group.pg->alltoall_base(recv, in, splits, splits));
  std::vector<int64_t> blocks = recv.sizes().vec();
  blocks[0] /= group.size;
  blocks.insert(blocks.begin(), group.size);
  auto finish = [recv, o, blocks]() mutable { at::sum_out(o, recv.view(blocks), 0); };
  return PendingCollective(&group, "alltoall (reduce-scatter)", bytes, std::move(work),
                           std::move(finish));
}

}  // namespace skrull::dist
