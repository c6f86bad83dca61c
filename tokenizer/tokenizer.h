// A Hugging Face tokenizer.json tokenizer: byte-level BPE as Qwen2 / Qwen2.5 /
// Qwen3 and Llama-3 use it. Encode(text, add_special_tokens) gives the ids
// Hugging Face tokenizers' `encode(text, add_special_tokens)` gives:
//   1. added tokens (special ones included) are cut out of the raw text first
//      (added_tokens.h);
//   2. each remaining segment is normalized (normalizer.h: NFC for Qwen2),
//      then cut on the `normalized: true` added tokens;
//   3. the pre-tokenizer (pre_tokenizer.h: the Split regex through PCRE2, then
//      ByteLevel) cuts it into pieces;
//   4. BPE (bpe.h) turns each piece into ids;
//   5. with add_special_tokens, the post-processor wraps the ids
//      (TemplateProcessing: Llama-3's <|begin_of_text|>; ByteLevel adds none).
// Anything else in the file (other model types, normalizers, pre-tokenizers,
// post-processors, truncation, padding) is refused at load, naming the type.
//
// Thread safety: immutable after Load; Encode may run concurrently.
#ifndef SKRULL_TOKENIZER_TOKENIZER_H_
#define SKRULL_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::tokenizer {

class AddedTokens;
class Bpe;
class Normalizer;
class PreTokenizer;
struct PostProcessorIds;

// Byte range [begin, end) of the input text a token came from. Tokens the
// post-processor adds have begin == end (at the start for a prefix).
struct TokenOffsets {
  uint32_t begin = 0;
  uint32_t end = 0;
};

class Tokenizer {
 public:
  // Parses a tokenizer.json document; `origin` (a path) prefixes messages.
  // InvalidArgument "<origin>: <field>: <problem>" for malformed or
  // unsupported content.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(std::string_view json_text,
                                                       const std::string& origin);
  // Reads and parses a tokenizer.json file (NotFound names the path).
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFile(const std::string& path);
  ~Tokenizer();

  // Appends the ids of `text`. InvalidArgument naming the byte offset when
  // `text` is not valid UTF-8 or is 4 GiB or longer. `offsets`, when not
  // null, gets one entry per appended id.
  Status Encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>* ids,
                std::vector<TokenOffsets>* offsets = nullptr) const;

  // The id of an added token or vocabulary entry spelled `content` (as text).
  std::optional<int32_t> TokenToId(std::string_view content) const;
  // Whether `id` is an added token marked special.
  bool IsSpecial(int32_t id) const;
  // One past the largest id the tokenizer can produce (vocabulary and added
  // tokens): the model's vocab_size must be at least this to use every id.
  int32_t end_id() const { return end_id_; }
  const std::string& origin() const { return origin_; }

 private:
  Tokenizer();
  Status EncodeSegment(std::string_view text, size_t base, std::vector<int32_t>* ids,
                       std::vector<TokenOffsets>* offsets) const;
  Status EncodePlain(std::string_view segment, std::vector<int32_t>* ids,
                     std::vector<TokenOffsets>* offsets) const;

  std::string origin_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<AddedTokens> added_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Bpe> bpe_;
  std::unique_ptr<PostProcessorIds> post_;
  int32_t end_id_ = 0;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_TOKENIZER_H_
