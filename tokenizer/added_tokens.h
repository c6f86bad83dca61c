// The added vocabulary of tokenizer.json ("added_tokens"): special and other
// added tokens, matched in the text before anything else, as Hugging Face
// tokenizers' AddedVocabulary does: leftmost-longest, non-overlapping;
// tokens with `normalized: false` against the raw text first, then tokens with
// `normalized: true` against each normalized remaining segment; `single_word`,
// `lstrip` and `rstrip` as there (\w and \s in their Unicode meaning).
//
// Private to tokenizer/. Thread safety: immutable after construction.
#ifndef SKRULL_TOKENIZER_ADDED_TOKENS_H_
#define SKRULL_TOKENIZER_ADDED_TOKENS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"

namespace skrull::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// A part of a text: an added token (id >= 0) or plain text (id == -1).
struct TextSplit {
  size_t begin;
  size_t end;
  int32_t id;
};

class AddedTokens {
 public:
  // From the "added_tokens" list; `normalizer` spells the normalized tokens.
  // Ids must be in [0, id_bound).
  static StatusOr<std::unique_ptr<AddedTokens>> FromJson(const nlohmann::json& list,
                                                         const Normalizer& normalizer,
                                                         int32_t id_bound);
  ~AddedTokens();

  // Splits `text` on the tokens with normalized == `normalized`; the splits
  // cover `text` in order (plain splits are never empty).
  Status Split(std::string_view text, bool normalized, std::vector<TextSplit>* out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* FindByContent(std::string_view content) const;
  const AddedToken* FindById(int32_t id) const;

 private:
  struct Trie;
  AddedTokens();
  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unique_ptr<Trie> raw_;         // normalized == false
  std::unique_ptr<Trie> normalized_;  // normalized == true, normalized spelling
  std::unique_ptr<Regex> word_end_;   // \w at the end of the text before a match
  std::unique_ptr<Regex> word_start_;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_ADDED_TOKENS_H_
