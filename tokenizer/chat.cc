#include "tokenizer/chat.h"

#include <algorithm>
#include <optional>

#include "common/json_fields.h"

namespace skrull::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

// tokenizer_config.json may nest JSON this deep (checked before parsing).
constexpr int kMaxConfigDepth = 64;

// The special-token attributes transformers passes to chat templates.
constexpr const char* kSpecialTokenKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                             "pad_token", "cls_token", "mask_token"};

// A token in tokenizer_config.json at `key` of `f`: "text" or {"content":
// "text", ...}; nullopt when absent or null.
StatusOr<std::optional<std::string>> TokenText(const JsonFields& f, const std::string& key,
                                               const nlohmann::json* value) {
  if (value == nullptr || value->is_null()) return std::optional<std::string>();
  if (value->is_string()) return std::optional<std::string>(value->get<std::string>());
  if (!value->is_object()) {
    return f.Error(key, "must be a string or {\"content\": \"...\"}", value);
  }
  SKRULL_ASSIGN_OR_RETURN(std::string text, f.Nested(key, *value).RequiredString("content"));
  return std::optional<std::string>(std::move(text));
}

bool IsBlank(const std::string& text, TokenOffsets o) {
  for (uint32_t i = o.begin; i < o.end && i < text.size(); ++i) {
    if (std::string_view(" \t\r\n").find(text[i]) == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view json_text,
                                               const std::string& origin) {
  if (auto deep = FindJsonNestingBeyond(json_text, kMaxConfigDepth)) {
    return InvalidArgumentError(origin + ":" + std::to_string(deep->line) +
                                ": JSON nested deeper than " + std::to_string(kMaxConfigDepth) +
                                " levels (byte " + std::to_string(deep->offset) + ")");
  }
  const auto doc = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(origin + ": not a tokenizer_config.json (not a JSON object)");
  }
  const JsonFields f(doc, origin);
  TokenizerConfig config;
  const auto named = doc.find("chat_template");
  if (named != doc.end() && named->is_array()) {
    for (size_t i = 0; i < named->size(); ++i) {
      const JsonFields t = f.Nested("chat_template[" + std::to_string(i) + "]", (*named)[i]);
      SKRULL_ASSIGN_OR_RETURN(const std::string name, t.RequiredString("name"));
      SKRULL_ASSIGN_OR_RETURN(std::string text, t.RequiredString("template"));
      if (name == "default") config.chat_template = std::move(text);
    }
    if (config.chat_template.empty()) {
      return f.Error("chat_template",
                     "a list without a template named \"default\"; set spec.data.chatTemplate");
    }
  } else if (named != doc.end() && !named->is_null() && !named->is_string()) {
    return f.Error("chat_template", "must be a string or a list of {\"name\", \"template\"}",
                   &*named);
  } else {
    SKRULL_ASSIGN_OR_RETURN(config.chat_template, f.OptionalString("chat_template"));
  }
  for (const char* key : kSpecialTokenKeys) {
    const auto it = doc.find(key);
    SKRULL_ASSIGN_OR_RETURN(std::optional<std::string> text,
                            TokenText(f, key, it == doc.end() ? nullptr : &*it));
    if (text) config.special_tokens.emplace_back(key, jinja::Value::String(std::move(*text)));
  }
  SKRULL_ASSIGN_OR_RETURN(const nlohmann::json* additional,
                          f.OptionalArray("additional_special_tokens"));
  if (additional != nullptr) {
    jinja::ValueList list;
    for (size_t i = 0; i < additional->size(); ++i) {
      SKRULL_ASSIGN_OR_RETURN(
          std::optional<std::string> text,
          TokenText(f, "additional_special_tokens[" + std::to_string(i) + "]", &(*additional)[i]));
      if (text) list.push_back(jinja::Value::String(std::move(*text)));
    }
    config.special_tokens.emplace_back("additional_special_tokens",
                                       jinja::Value::List(std::move(list)));
  }
  return config;
}

StatusOr<std::unique_ptr<ChatTemplate>> ChatTemplate::Create(const std::string& source,
                                                             jinja::ValueDict special_tokens,
                                                             const std::string& origin) {
  auto parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) return parsed.status().WithContext(origin + ": chat template");
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->template_ = std::move(*parsed);
  t->special_tokens_ = std::move(special_tokens);
  t->origin_ = origin;
  return t;
}

StatusOr<jinja::TaggedString> ChatTemplate::Render(const Json& messages,
                                                   const jinja::RenderOptions& options) const {
  if (!messages.is_array()) {
    return InvalidArgumentError(origin_ + ": chat template: messages must be a list");
  }
  if (jinja::JsonDepthExceeds(messages, jinja::kMaxValueDepth)) {
    return InvalidArgumentError(origin_ + ": chat template: messages nest deeper than " +
                                std::to_string(jinja::kMaxValueDepth) + " levels");
  }
  jinja::ValueList list;
  for (size_t i = 0; i < messages.size(); ++i) {
    jinja::Value m = jinja::Value::FromJson(messages[i]);
    const Json& role = messages[i].contains("role") ? messages[i]["role"] : Json();
    if (m.IsDict() && role.is_string() && role.get<std::string>() == "assistant") {
      for (auto& [key, value] : m.Entries()) {
        if (key != "content" || !value.IsString() || value.Text().empty()) continue;
        jinja::TaggedString tagged = value.Str();
        tagged.spans = {{0, static_cast<uint32_t>(tagged.text.size()), static_cast<int32_t>(i)}};
        value = jinja::Value::String(std::move(tagged));
      }
    }
    list.push_back(std::move(m));
  }
  jinja::ValueDict variables = {
      {"messages", jinja::Value::List(std::move(list))},
      {"add_generation_prompt", jinja::Value::Bool(false)},
      {"tools", jinja::Value::None()},
      {"documents", jinja::Value::None()},
  };
  for (const auto& entry : special_tokens_) variables.push_back(entry);
  auto rendered = template_->Render(variables, options);
  if (!rendered.ok()) return rendered.status().WithContext(origin_ + ": chat template");
  return rendered;
}

std::vector<int32_t> ChatLabels(const jinja::TaggedString& rendered,
                                const std::vector<int32_t>& ids,
                                const std::vector<TokenOffsets>& offsets,
                                const Tokenizer& tokenizer) {
  std::vector<int32_t> labels(ids.size(), kIgnoreLabel);
  // Each token's tag: the assistant message its bytes came from, or -1.
  std::vector<int32_t> tag(ids.size(), -1);
  size_t span = 0;
  const auto& spans = rendered.spans;
  for (size_t k = 0; k < ids.size(); ++k) {
    const TokenOffsets& o = offsets[k];
    while (span < spans.size() && spans[span].end <= o.begin) ++span;
    for (size_t s = span; s < spans.size() && spans[s].begin < o.end; ++s) {
      if (std::max(spans[s].begin, o.begin) < std::min(spans[s].end, o.end)) {
        tag[k] = spans[s].tag;
        break;
      }
    }
  }
  for (size_t k = 0; k < ids.size(); ++k) {
    if (tag[k] < 0) continue;
    labels[k] = ids[k];
    // The end of this turn's content: label the next special token.
    const bool last_of_turn = k + 1 == ids.size() || tag[k + 1] != tag[k];
    if (!last_of_turn) continue;
    for (size_t j = k + 1; j < ids.size() && tag[j] < 0; ++j) {
      if (tokenizer.IsSpecial(ids[j])) {
        labels[j] = ids[j];
        break;
      }
      if (!IsBlank(rendered.text, offsets[j])) break;  // template text, not the turn's end
    }
  }
  return labels;
}

}  // namespace skrull::tokenizer
