// The packed execution contract between the trainer and the model: one
// rank's token stream for one micro-batch, with no padding.
#ifndef SKRULL_TRAINER_MODEL_PACKED_BATCH_H_
#define SKRULL_TRAINER_MODEL_PACKED_BATCH_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

namespace skrull::model {

struct PackedBatch {
  at::Tensor input_ids;  // [T] int64 (torch::Tensor is the same type)
  at::Tensor
      position_ids;    // [T] int64: restart at 0 per sequence; CP shards carry global positions
  at::Tensor targets;  // [T] int64, already shifted (targets[i] = next token), -100 = no loss
  // Boundaries of the whole ("local") sequences in the stream: {0, l0, l0+l1, ...}.
  std::vector<int64_t> cu_seqlens;
  // [T] int64 or undefined: the whole length of the sequence each token
  // belongs to. Read only by "dynamic" RoPE (rope.h); undefined, the model
  // takes it from cu_seqlens, which suffices when every token is in a whole
  // sequence (no CP shard).
  at::Tensor sequence_lengths;

  int64_t NumTokens() const { return input_ids.defined() ? input_ids.size(0) : 0; }
};

// Packs whole sequences for causal-LM training: positions 0..len-1 per
// sequence, targets[i] = tokens[i + 1] inside a sequence and -100 on each
// sequence's last token. Tensors are created on `device`. Empty sequences
// are allowed (they add a repeated boundary).
PackedBatch PackSequences(const std::vector<std::vector<int64_t>>& sequences,
                          c10::Device device = c10::Device(c10::kCPU));

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_PACKED_BATCH_H_
