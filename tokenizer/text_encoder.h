// TextEncoder: what text-jsonl data needs from a Hugging Face tokenizer, in
// one object: load a tokenizer.json or a model folder (+ tokenizer_config.json
// and its chat template), encode `text` records as `encode(text)` does (the
// post-processor's special tokens included), and `messages` records as
// `apply_chat_template(messages, tokenize=True)` does, with assistant-only
// labels (chat.h). trainer/data and skrull-tokenize both use it.
//
// Thread safety: immutable after Load; Encode* may run concurrently.
#ifndef SKRULL_TOKENIZER_TEXT_ENCODER_H_
#define SKRULL_TOKENIZER_TEXT_ENCODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace skrull::tokenizer {

struct TextEncoderOptions {
  // A tokenizer.json file, or a folder holding tokenizer.json (and
  // optionally tokenizer_config.json and chat_template.jinja). A
  // tokenizer_config.json / chat_template.jinja beside a named file is used too.
  std::string path;
  // A chat template that replaces the model's (spec.data.chatTemplate).
  std::string chat_template;
  // The work budget of rendering one chat (spec.data.templateMax*).
  jinja::RenderLimits template_limits{};
};

struct EncodedRecord {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> labels;  // empty for text: every token is a label
};

class TextEncoder {
 public:
  // NotFound naming the path for missing files; InvalidArgument for
  // unsupported tokenizers and templates that do not parse.
  static StatusOr<std::unique_ptr<TextEncoder>> Load(const TextEncoderOptions& options);

  // encode(text) with add_special_tokens=True.
  StatusOr<EncodedRecord> EncodeText(std::string_view text) const;
  // apply_chat_template(messages, tokenize=True) and its labels.
  // FailedPrecondition when there is no chat template (naming what to set).
  StatusOr<EncodedRecord> EncodeChat(const nlohmann::ordered_json& messages) const;

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // 16 hex digits identifying the tokenizer files' bytes and the template:
  // equal fingerprints encode identically (used to key the length index).
  const std::string& fingerprint() const { return fingerprint_; }
  // Where the chat template came from ("" = none).
  const std::string& chat_template_origin() const { return template_origin_; }

 private:
  TextEncoder() = default;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_;
  jinja::RenderOptions render_options_;
  std::string fingerprint_;
  std::string template_origin_;
  std::string path_;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_TEXT_ENCODER_H_
