#include "trainer/data/jsonl_record.h"

#include <limits>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "trainer/data/byte_tokenizer.h"
#include "trainer/data/json_depth.h"
#include "trainer/data/sample.h"

namespace skrull::data {

namespace {

using Json = nlohmann::json;

constexpr char kTokenizedShape[] =
    "a tokenized-jsonl line is {\"input_ids\": [ints], \"labels\": [ints, optional]}";
constexpr char kTextShape[] =
    "a text-jsonl line is {\"text\": \"...\"} or {\"messages\": [{\"role\": "
    "\"user\", \"content\": \"...\"}, {\"role\": \"assistant\", \"content\": \"...\"}]}";

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 5:
// ..." without the bracketed id.
std::string ParseErrorText(const std::exception& e) {
  std::string what = e.what();
  size_t close = what.find("] ");
  if (what.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
    what = what.substr(close + 2);
  }
  return what;
}

Status ParseObject(std::string_view line, const char* shape, Json* out) {
  // Preview() and the error paths print values recursively.
  SKRULL_RETURN_IF_ERROR(CheckJsonDepth(line, shape));
  try {
    *out = Json::parse(line.begin(), line.end());
  } catch (const Json::exception& e) {  // parse_error; out_of_range for 1e999
    return InvalidArgumentError("not valid JSON (" + ParseErrorText(e) +
                                "); each line must be one JSON object: " + shape);
  }
  if (!out->is_object()) {
    return InvalidArgumentError(std::string("expected a JSON object, got ") + out->type_name() +
                                "; " + shape);
  }
  return OkStatus();
}

std::string Preview(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

Status ReadIntArray(const Json& obj, const char* key, std::vector<int32_t>* out) {
  const Json& arr = obj.at(key);
  if (!arr.is_array()) {
    return InvalidArgumentError(std::string("\"") + key + "\" must be an array of integers, got " +
                                arr.type_name() + " " + Preview(arr));
  }
  out->clear();
  out->reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const Json& v = arr[i];
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!v.is_number_integer()) {
      return InvalidArgumentError(where + " is " + Preview(v) + ", not an integer; " + key +
                                  " must hold integer token ids");
    }
    bool fits;
    int64_t x = 0;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      fits = u <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
      x = static_cast<int64_t>(u);
    } else {
      x = v.get<int64_t>();
      fits = x >= std::numeric_limits<int32_t>::min() && x <= std::numeric_limits<int32_t>::max();
    }
    if (!fits) {
      return InvalidArgumentError(where + " = " + Preview(v) +
                                  " does not fit a 32-bit token id; the file is not token ids");
    }
    out->push_back(static_cast<int32_t>(x));
  }
  return OkStatus();
}

std::string VocabRange(int32_t vocab_size) {
  return vocab_size > 0 ? "[0, " + std::to_string(vocab_size) + ")" : "[0, vocab_size)";
}

}  // namespace

Status DomParseTokenizedLine(std::string_view line, TokenRecord* record) {
  Json obj;
  SKRULL_RETURN_IF_ERROR(ParseObject(line, kTokenizedShape, &obj));
  if (!obj.contains("input_ids")) {
    std::string hint;
    if (obj.contains("text") || obj.contains("messages")) {
      hint = " (this line looks like text-jsonl: set spec.data.format: text-jsonl)";
    }
    return InvalidArgumentError(std::string("missing \"input_ids\"; ") + kTokenizedShape + hint);
  }
  SKRULL_RETURN_IF_ERROR(ReadIntArray(obj, "input_ids", &record->input_ids));
  record->labels.clear();
  record->has_labels = obj.contains("labels") && !obj.at("labels").is_null();
  if (record->has_labels) SKRULL_RETURN_IF_ERROR(ReadIntArray(obj, "labels", &record->labels));
  return OkStatus();
}

Status ValidateTokenRecord(const TokenRecord& record, int32_t vocab_size) {
  const auto& ids = record.input_ids;
  if (ids.empty()) {
    return InvalidArgumentError(
        "input_ids is empty; a sample needs at least one token (remove the "
        "line)");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || (vocab_size > 0 && ids[i] >= vocab_size)) {
      std::string msg = "input_ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                        " is outside the vocabulary " + VocabRange(vocab_size);
      if (ids[i] >= 0) msg += "; was the data tokenized for a different model?";
      return InvalidArgumentError(msg);
    }
  }
  if (!record.has_labels) return OkStatus();
  if (record.labels.size() != ids.size()) {
    return InvalidArgumentError("labels has length " + std::to_string(record.labels.size()) +
                                " but input_ids has length " + std::to_string(ids.size()) +
                                "; give one label per token (unshifted; -100 masks a token)");
  }
  for (size_t i = 0; i < record.labels.size(); ++i) {
    int32_t l = record.labels[i];
    if (l == kIgnoreIndex) continue;
    if (l < 0 || (vocab_size > 0 && l >= vocab_size)) {
      return InvalidArgumentError("labels[" + std::to_string(i) + "] = " + std::to_string(l) +
                                  "; a label is -100 (no loss) or a token id in " +
                                  VocabRange(vocab_size));
    }
  }
  return OkStatus();
}

Status ParseTokenizedLine(std::string_view line, int32_t vocab_size, TokenRecord* record) {
  if (!FastParseTokenizedLine(line, record)) {
    SKRULL_RETURN_IF_ERROR(DomParseTokenizedLine(line, record));
  }
  return ValidateTokenRecord(*record, vocab_size);
}

namespace {

Status ReadString(const Json& obj, const std::string& key, const std::string& where,
                  std::string* out) {
  if (!obj.contains(key)) return InvalidArgumentError(where + " is missing \"" + key + "\"");
  const Json& v = obj.at(key);
  if (!v.is_string()) {
    return InvalidArgumentError(where + "." + key + " must be a string, got " + v.type_name() +
                                " " + Preview(v));
  }
  *out = v.get<std::string>();
  return OkStatus();
}

}  // namespace

Status ParseTextLine(std::string_view line, TokenRecord* record,
                     const tokenizer::TextEncoder* encoder, int32_t vocab_size) {
  if (encoder != nullptr) return ParseTextLineWithTokenizer(line, *encoder, vocab_size, record);
  Json obj;
  SKRULL_RETURN_IF_ERROR(ParseObject(line, kTextShape, &obj));
  const bool has_text = obj.contains("text");
  const bool has_messages = obj.contains("messages");
  if (has_text && has_messages) {
    return InvalidArgumentError("has both \"text\" and \"messages\"; keep one");
  }
  EncodedText encoded;
  if (has_text) {
    const Json& v = obj.at("text");
    if (!v.is_string()) {
      return InvalidArgumentError(std::string("\"text\" must be a string, got ") + v.type_name() +
                                  " " + Preview(v));
    }
    const std::string& text = v.get_ref<const std::string&>();
    if (text.empty()) {
      return InvalidArgumentError("\"text\" is empty; a sample needs some text (remove the line)");
    }
    SKRULL_ASSIGN_OR_RETURN(encoded, EncodeText(text));
  } else if (has_messages) {
    const Json& arr = obj.at("messages");
    if (!arr.is_array()) {
      return InvalidArgumentError(std::string("\"messages\" must be an array of {role, content}, "
                                              "got ") +
                                  arr.type_name());
    }
    if (arr.empty()) {
      return InvalidArgumentError("\"messages\" is empty; add at least an assistant turn");
    }
    std::vector<ChatMessage> messages(arr.size());
    bool has_assistant = false;
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string where = "messages[" + std::to_string(i) + "]";
      const Json& m = arr[i];
      if (!m.is_object()) {
        return InvalidArgumentError(where +
                                    " must be an object {\"role\": ..., \"content\": ...}, "
                                    "got " +
                                    m.type_name());
      }
      std::string role;
      SKRULL_RETURN_IF_ERROR(ReadString(m, "role", where, &role));
      auto parsed = ParseChatRole(role);
      if (!parsed.ok()) return parsed.status().WithContext(where + ".role");
      messages[i].role = *parsed;
      has_assistant |= *parsed == ChatRole::kAssistant;
      SKRULL_RETURN_IF_ERROR(ReadString(m, "content", where, &messages[i].content));
    }
    if (!has_assistant) {
      return InvalidArgumentError(
          "\"messages\" has no assistant turn, so no token would carry "
          "loss; add {\"role\": \"assistant\", \"content\": ...}");
    }
    SKRULL_ASSIGN_OR_RETURN(encoded, EncodeChat(messages));
  } else {
    std::string hint;
    if (obj.contains("input_ids")) {
      hint = " (this line looks like tokenized-jsonl: set spec.data.format: tokenized-jsonl)";
    }
    return InvalidArgumentError(std::string("missing \"text\" or \"messages\"; ") + kTextShape +
                                hint);
  }
  record->input_ids = std::move(encoded.input_ids);
  record->labels = std::move(encoded.labels);
  record->has_labels = true;
  return OkStatus();
}

}  // namespace skrull::data
