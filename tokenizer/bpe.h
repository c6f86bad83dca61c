// The byte-level BPE model of tokenizer.json ("model": {"type": "BPE"}):
// vocabulary and merges by rank, applied as Hugging Face tokenizers does (the
// lowest-ranked adjacent pair first, the leftmost on ties), with its
// `ignore_merges` shortcut (Llama-3: a piece that is itself in the vocabulary
// is one token). Works on raw bytes: vocabulary keys are decoded from the
// byte-level alphabet (byte_level.h) once, at load.
//
// Private to tokenizer/. Thread safety: immutable after construction; Encode
// may run concurrently (each thread keeps its own piece cache).
#ifndef SKRULL_TOKENIZER_BPE_H_
#define SKRULL_TOKENIZER_BPE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace skrull::tokenizer {

class Bpe {
 public:
  // From the "model" value. InvalidArgument for other model types, options
  // this implementation does not have (dropout, byte_fallback, subword
  // prefixes/suffixes), merges that name unknown tokens, a vocabulary
  // without all 256 byte tokens, and ids outside [0, id_bound) (the caller
  // passes the number of tokens the file holds, so tables indexed by id are
  // sized by the file, not by its largest number).
  static StatusOr<std::unique_ptr<Bpe>> FromJson(const nlohmann::json& model, int32_t id_bound);

  // Appends the ids of one pre-tokenized piece (its raw bytes).
  void Encode(std::string_view bytes, std::vector<int32_t>* ids) const;

  // The id of a token given as raw bytes, if it is in the vocabulary.
  std::optional<int32_t> Find(std::string_view bytes) const;

  // Raw byte length of token `id` (0 for ids outside the model).
  uint32_t TokenBytes(int32_t id) const;

  // One past the largest id in the vocabulary.
  int32_t end_id() const { return static_cast<int32_t>(token_bytes_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Merge* FindMerge(int32_t a, int32_t b) const;
  void MergeBytes(std::string_view bytes, std::vector<int32_t>* ids) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<uint32_t> token_bytes_;  // by id
  bool ignore_merges_ = false;
  uint64_t instance_ = 0;  // keys the per-thread cache
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_BPE_H_
