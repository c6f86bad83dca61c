// Chat rendering and loss labels, as transformers does it for training data.
//
// ChatTemplate renders a `messages` list exactly as transformers'
// `apply_chat_template(messages, tokenize=False, add_generation_prompt=False)`:
// the template gets `messages`, `add_generation_prompt=False`, `tools=None`,
// `documents=None` and the tokenizer's special tokens (bos_token, eos_token,
// unk_token, pad_token, additional_special_tokens, ... as strings, only those
// tokenizer_config.json sets). Assistant messages' "content" strings are
// tagged (jinja/value.h) so the rendered text knows which bytes are answers.
//
// ChatLabels turns that into Hugging Face style (unshifted) labels for the
// ids of `tokenizer.Encode(rendered, add_special_tokens=false)` (what
// apply_chat_template(tokenize=True) gives): a token carries its own id as
// label when any of its bytes came from an assistant content, and so does the
// first special token after each assistant turn's content (its end-of-turn
// token: <|im_end|>, <|eot_id|>, </s>) when only whitespace lies between;
// every other label is -100.
//
// Thread safety: immutable after Create; Render may run concurrently.
#ifndef SKRULL_TOKENIZER_CHAT_H_
#define SKRULL_TOKENIZER_CHAT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace skrull::tokenizer {

inline constexpr int32_t kIgnoreLabel = -100;

// What a chat template needs from tokenizer_config.json.
struct TokenizerConfig {
  std::string chat_template;        // empty when the file has none
  jinja::ValueDict special_tokens;  // bos_token, eos_token, ... -> strings (lists)
};

// Parses tokenizer_config.json. "chat_template" may be a string or a list of
// {"name", "template"} (the one named "default" is used).
StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view json_text,
                                               const std::string& origin);

class ChatTemplate {
 public:
  // InvalidArgument "<origin>: line N: ..." when the template does not parse.
  static StatusOr<std::unique_ptr<ChatTemplate>> Create(const std::string& source,
                                                        jinja::ValueDict special_tokens,
                                                        const std::string& origin);

  // `messages`: a JSON array of objects. Spans are tagged with the index of
  // the assistant message they came from. Errors name the origin and the
  // template's line (raise_exception messages included).
  StatusOr<jinja::TaggedString> Render(const nlohmann::ordered_json& messages,
                                       const jinja::RenderOptions& options = {}) const;

 private:
  ChatTemplate() = default;
  std::unique_ptr<jinja::Template> template_;
  jinja::ValueDict special_tokens_;
  std::string origin_;
};

// Labels for `ids` (with their `offsets` in `rendered`), as described above.
std::vector<int32_t> ChatLabels(const jinja::TaggedString& rendered,
                                const std::vector<int32_t>& ids,
                                const std::vector<TokenOffsets>& offsets,
                                const Tokenizer& tokenizer);

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_CHAT_H_
