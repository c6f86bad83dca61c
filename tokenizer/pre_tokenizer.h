// The pre-tokenizers of tokenizer.json this tokenizer supports: Split (a regex
// or a literal, with the five Hugging Face delimiter behaviours and invert),
// ByteLevel (add_prefix_space; use_regex = the GPT-2 pattern), and Sequence.
// Together they cut a normalized segment into the pieces BPE encodes.
//
// Private to tokenizer/. Thread safety: immutable after construction;
// PreTokenize may run concurrently.
#ifndef SKRULL_TOKENIZER_PRE_TOKENIZER_H_
#define SKRULL_TOKENIZER_PRE_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/regex.h"

namespace skrull::tokenizer {

// A piece of a segment: bytes [begin, end) of the segment, preceded by one
// space byte that ByteLevel's add_prefix_space inserted when `space_prefix`.
struct Piece {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool space_prefix = false;
};

class PreTokenizer {
 public:
  // From the "pre_tokenizer" value. InvalidArgument naming the type for
  // pre-tokenizers that are not supported. `has_byte_level` tells whether a
  // ByteLevel step is present (the vocabulary is byte-level only then).
  static StatusOr<std::unique_ptr<PreTokenizer>> FromJson(const nlohmann::json& spec);
  ~PreTokenizer();

  bool has_byte_level() const { return has_byte_level_; }

  // Cuts `segment` (valid UTF-8; < 4 GiB) into non-empty pieces, in order.
  Status PreTokenize(std::string_view segment, std::vector<Piece>* pieces) const;

  struct Step;

 private:
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Step>> steps_;
  bool has_byte_level_ = false;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_PRE_TOKENIZER_H_
