// Private to trainer/data: one JSONL line -> token ids and unshifted labels.
// Messages do not carry FILE:LINE; the Dataset adds it.
#ifndef SKRULL_TRAINER_DATA_JSONL_RECORD_H_
#define SKRULL_TRAINER_DATA_JSONL_RECORD_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::tokenizer {
class TextEncoder;
}  // namespace skrull::tokenizer

namespace skrull::data {

// One line's tokens. `labels` are UNSHIFTED (Hugging Face). has_labels false
// (no "labels" key, or null) means every token is a label; labels is empty then.
struct TokenRecord {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> labels;
  bool has_labels = false;
};

// tokenized-jsonl: {"input_ids": [ints], "labels": [ints] (optional, may be
// null)}; other keys are ignored. Tries FastParseTokenizedLine, falls back to
// DomParseTokenizedLine, then ValidateTokenRecord. `vocab_size` 0 = ids are
// not checked against a vocabulary.
Status ParseTokenizedLine(std::string_view line, int32_t vocab_size, TokenRecord* record);

// A hand-written scanner for the common case. Returns true with `record`
// filled when `line` is a JSON object it fully understood (strictly valid
// JSON; plain-ASCII strings; input_ids / labels integer arrays in int32 range
// appearing at most once). Returns false for anything else, including valid
// JSON it does not handle; then DomParseTokenizedLine decides and explains.
// Never accepts a line the DOM parser rejects; never disagrees when both accept.
bool FastParseTokenizedLine(std::string_view line, TokenRecord* record);

// The reference parser (nlohmann::json). Checks syntax and types only.
Status DomParseTokenizedLine(std::string_view line, TokenRecord* record);

// Empty sample, ids outside [0, vocab_size), labels length and values.
Status ValidateTokenRecord(const TokenRecord& record, int32_t vocab_size);

// text-jsonl: {"text": string} or {"messages": [{"role", "content"}, ...]},
// encoded with the byte tokenizer (byte_tokenizer.h), or, when `encoder` is
// given, with a Hugging Face tokenizer (ParseTextLineWithTokenizer).
Status ParseTextLine(std::string_view line, TokenRecord* record,
                     const tokenizer::TextEncoder* encoder = nullptr, int32_t vocab_size = 0);

// text-jsonl through `encoder` (tokenizer/text_encoder.h): "text" as
// encode(text) (has_labels false: every token is a label); "messages" (a
// non-empty list of objects with a string "role", at least one "assistant")
// as apply_chat_template(messages, tokenize=True) with assistant-only labels.
// Ids >= `vocab_size` (0 = unchecked) are an error naming the id.
Status ParseTextLineWithTokenizer(std::string_view line, const tokenizer::TextEncoder& encoder,
                                  int32_t vocab_size, TokenRecord* record);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_JSONL_RECORD_H_
