// The context-parallel exchange primitives: the K/V all-gather and the
// dK/dV reduce-scatter of distributed sequences (paper §5), on any Group
// (the CP group, or an aligned sub-group of it).
//
// Which c10d call runs is decided by the group's backend, in one place
// (AllGatherMethodFor / ReduceScatterMethodFor):
//   NCCL: the native collectives into/out of one flat tensor,
//         `_allgather_base` and `_reduce_scatter_base` (no per-rank copies);
//   Gloo: the list all-gather, and the reduce-scatter emulated as an
//         all-to-all plus a local sum (Gloo has no reduce-scatter in 1.13);
//   one rank: a local copy, no communication.
//
// Streams (NCCL): c10d's ProcessGroupNCCL runs every collective on its own
// side stream. At launch that stream waits on an event recorded on the
// caller's current stream (so it sees the packed input), and the caller's
// stream keeps running (the local attention queued next overlaps the
// transfer). PendingCollective::Wait() then makes the caller's current
// stream wait on the collective's end event: the host does not block and no
// device-wide synchronize happens; Wait() returns ~0 seconds there (the
// device-side wait is not measured). Memory of the tensors in flight: up to
// PyTorch 2.6 c10d calls record_stream on its side stream, so the caching
// allocator does not reuse them before the transfer ends; from 2.7 it stashes
// references to them in the Work instead (TORCH_NCCL_AVOID_RECORD_STREAMS on
// by default; ProcessGroupNCCL.hpp's TensorShelf) and releases them at
// wait(). Either way a PendingCollective must be Wait()ed before its tensors
// are reused; dropping one without Wait() frees nothing early on 2.6 but
// leaves 2.7+ to release them only when the watchdog retires the Work.
//
// Thread safety: as Group (one issuing thread per rank; the same sequence of
// collectives on every member).
#ifndef SKRULL_TRAINER_DIST_CP_EXCHANGE_H_
#define SKRULL_TRAINER_DIST_CP_EXCHANGE_H_

#include <ATen/core/Tensor.h>

#include "trainer/dist/process_groups.h"

namespace skrull::dist {

// The c10d call behind each primitive.
enum class ExchangeMethod {
  kLocalCopy,              // group of one rank
  kNcclAllGatherBase,      // ProcessGroupNCCL::_allgather_base
  kGlooAllGatherList,      // ProcessGroupGloo::allgather into per-rank views
  kNcclReduceScatterBase,  // ProcessGroupNCCL::_reduce_scatter_base
  kGlooAllToAllSum,        // ProcessGroupGloo::alltoall_base, then a local sum
};
const char* ExchangeMethodName(ExchangeMethod method);
ExchangeMethod AllGatherMethodFor(const Group& group);
ExchangeMethod ReduceScatterMethodFor(const Group& group);

// out[r*n : (r+1)*n] = input of group rank r, for inputs of n rows each.
// REQUIRES: out.size(0) == group.size * input.size(0), both contiguous, same
// dtype and device (a CUDA device on NCCL).
PendingCollective StartAllGather(Group& group, const at::Tensor& input, const at::Tensor& out);

// out = sum over group ranks of input[rank*n : (rank+1)*n].
// REQUIRES: input.size(0) == group.size * out.size(0), contiguous, same dtype
// and device.
PendingCollective StartReduceScatterSum(Group& group, const at::Tensor& input,
                                        const at::Tensor& out);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_CP_EXCHANGE_H_
