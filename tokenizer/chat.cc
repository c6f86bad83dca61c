#include "tokenizer/chat.h"

#include <algorithm>

namespace skrull::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

// The special-token attributes transformers passes to chat templates.
constexpr const char* kSpecialTokenKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                             "pad_token", "cls_token", "mask_token"};

// A token in tokenizer_config.json: "text" or {"content": "text", ...}.
bool TokenText(const Json& v, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return true;
  }
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    *out = v["content"].get<std::string>();
    return true;
  }
  return false;
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
  Json doc = Json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(origin + ": not a tokenizer_config.json (not a JSON object)");
  }
  TokenizerConfig config;
  if (doc.contains("chat_template")) {
    const Json& t = doc["chat_template"];
    if (t.is_string()) {
      config.chat_template = t.get<std::string>();
    } else if (t.is_array()) {
      for (const Json& named : t) {
        if (named.is_object() && named.contains("name") && named["name"] == "default" &&
            named.contains("template") && named["template"].is_string()) {
          config.chat_template = named["template"].get<std::string>();
        }
      }
      if (config.chat_template.empty()) {
        return InvalidArgumentError(origin +
                                    ": chat_template: a list without a template named "
                                    "\"default\"; set spec.data.chatTemplate");
      }
    } else if (!t.is_null()) {
      return InvalidArgumentError(origin + ": chat_template: must be a string or a list");
    }
  }
  for (const char* key : kSpecialTokenKeys) {
    std::string text;
    if (doc.contains(key) && TokenText(doc[key], &text)) {
      config.special_tokens.emplace_back(key, jinja::Value::String(text));
    }
  }
  if (doc.contains("additional_special_tokens") && doc["additional_special_tokens"].is_array()) {
    jinja::ValueList list;
    for (const Json& v : doc["additional_special_tokens"]) {
      std::string text;
      if (TokenText(v, &text)) list.push_back(jinja::Value::String(text));
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
