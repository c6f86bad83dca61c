// ParseTextLineWithTokenizer: text-jsonl lines through a Hugging Face
// tokenizer (tokenizer/text_encoder.h). The JSON is read with key order kept
// (ordered_json), because chat templates may print message objects.
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "tokenizer/text_encoder.h"
#include "trainer/data/json_depth.h"
#include "trainer/data/jsonl_record.h"

namespace skrull::data {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kShape[] =
    "a text-jsonl line is {\"text\": \"...\"} or {\"messages\": [{\"role\": \"user\", "
    "\"content\": \"...\"}, {\"role\": \"assistant\", \"content\": \"...\"}]}";

Status CheckMessages(const Json& messages) {
  if (!messages.is_array() || messages.empty()) {
    return InvalidArgumentError("\"messages\" must be a non-empty list of {role, content}");
  }
  bool has_assistant = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return InvalidArgumentError(where + " must be an object with a string \"role\"");
    }
    has_assistant |= m["role"] == "assistant";
  }
  if (!has_assistant) {
    return InvalidArgumentError(
        "\"messages\" has no assistant turn, so no token would carry loss; add {\"role\": "
        "\"assistant\", \"content\": ...}");
  }
  return OkStatus();
}

}  // namespace

Status ParseTextLineWithTokenizer(std::string_view line, const tokenizer::TextEncoder& encoder,
                                  int32_t vocab_size, TokenRecord* record) {
  // Chat-template values are built recursively from the JSON.
  SKRULL_RETURN_IF_ERROR(CheckJsonDepth(line, kShape));
  Json obj = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) {
    return InvalidArgumentError(std::string("not valid JSON (or not UTF-8); each line must be one "
                                            "JSON object: ") +
                                kShape);
  }
  if (!obj.is_object()) {
    return InvalidArgumentError(std::string("expected a JSON object, got ") + obj.type_name() +
                                "; " + kShape);
  }
  const bool has_text = obj.contains("text");
  const bool has_messages = obj.contains("messages");
  if (has_text == has_messages) {
    return InvalidArgumentError(has_text
                                    ? std::string("has both \"text\" and \"messages\"; keep one")
                                    : std::string("missing \"text\" or \"messages\"; ") + kShape);
  }
  StatusOr<tokenizer::EncodedRecord> encoded = InternalError("unset");
  if (has_text) {
    if (!obj["text"].is_string() || obj["text"].get_ref<const std::string&>().empty()) {
      return InvalidArgumentError("\"text\" must be a non-empty string");
    }
    encoded = encoder.EncodeText(obj["text"].get_ref<const std::string&>());
  } else {
    SKRULL_RETURN_IF_ERROR(CheckMessages(obj["messages"]));
    encoded = encoder.EncodeChat(obj["messages"]);
  }
  if (!encoded.ok()) return encoded.status();
  for (size_t i = 0; i < encoded->input_ids.size(); ++i) {
    const int32_t id = encoded->input_ids[i];
    if (vocab_size > 0 && id >= vocab_size) {
      return InvalidArgumentError("token id " + std::to_string(id) + " (input_ids[" +
                                  std::to_string(i) + "]) is >= the model's vocab_size " +
                                  std::to_string(vocab_size) + "; " + encoder.tokenizer().origin() +
                                  " does not belong to this model: set spec.data.tokenizer to "
                                  "the model's own tokenizer");
    }
  }
  record->input_ids = std::move(encoded->input_ids);
  record->labels = std::move(encoded->labels);
  record->has_labels = !record->labels.empty();
  if (record->input_ids.empty()) {
    return InvalidArgumentError(
        "encodes to no tokens; a sample needs at least one (remove the line)");
  }
  return OkStatus();
}

}  // namespace skrull::data
