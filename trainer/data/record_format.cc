#include "trainer/data/record_format.h"

#include <nlohmann/json.hpp>

#include "trainer/data/json_depth.h"

namespace skrull::data {
namespace {

using Json = nlohmann::ordered_json;

// Field names of one line's format after the mapping.
class Names {
 public:
  Names(const char* format, const std::map<std::string, std::string>& fields)
      : format_(format), fields_(fields) {}
  // The name the file uses for standard name `key`.
  std::string operator()(const std::string& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? key : it->second;
  }
  // Where `key` comes from, for messages: "\"prompt\" (the alpaca instruction,
  // spec.data.fields.instruction)" or "\"instruction\" (alpaca)".
  std::string Describe(const std::string& key) const {
    const std::string name = (*this)(key);
    if (name == key) return "\"" + key + "\" (" + format_ + ")";
    return "\"" + name + "\" (the " + format_ + " " + key + ", spec.data.fields." + key + ")";
  }

 private:
  const char* format_;
  const std::map<std::string, std::string>& fields_;
};

// obj[names(key)] as a string: required, or optional (absent or null -> "").
Status GetString(const Json& obj, const Names& names, const std::string& key, bool required,
                 std::string* out) {
  out->clear();
  auto it = obj.find(names(key));
  if (it == obj.end() || it->is_null()) {
    if (!required) return OkStatus();
    return InvalidArgumentError("missing " + names.Describe(key) +
                                "; add it, or map the name this file uses with "
                                "spec.data.fields." +
                                key);
  }
  if (!it->is_string()) {
    return InvalidArgumentError(names.Describe(key) + " must be a string, got " + it->type_name());
  }
  *out = it->get<std::string>();
  return OkStatus();
}

Json Message(const char* role, std::string content) {
  return Json{{"role", role}, {"content", std::move(content)}};
}

StatusOr<Json> FromAlpaca(const Json& obj, const Names& n) {
  std::string instruction, input, output, system;
  SKRULL_RETURN_IF_ERROR(GetString(obj, n, "instruction", true, &instruction));
  SKRULL_RETURN_IF_ERROR(GetString(obj, n, "input", false, &input));
  SKRULL_RETURN_IF_ERROR(GetString(obj, n, "output", true, &output));
  SKRULL_RETURN_IF_ERROR(GetString(obj, n, "system", false, &system));
  Json messages = Json::array();
  if (!system.empty()) messages.push_back(Message("system", system));
  messages.push_back(Message("user", input.empty() ? instruction : instruction + "\n" + input));
  messages.push_back(Message("assistant", output));
  return Json{{"messages", std::move(messages)}};
}

StatusOr<const char*> ShareGptRole(const std::string& from, size_t turn, const Names& n) {
  if (from == n("human") || from == "human" || from == "user") return "user";
  if (from == n("gpt") || from == "gpt" || from == "assistant") return "assistant";
  if (from == "system" && turn == 0) return "system";
  return InvalidArgumentError(
      n.Describe("conversations") + "[" + std::to_string(turn) + "]: role '" + from +
      "' is not one of '" + n("human") + "' (user), '" + n("gpt") +
      "' (assistant) or 'system' (first turn only); map this data's role values with "
      "spec.data.fields.human and spec.data.fields.gpt");
}

StatusOr<Json> FromShareGpt(const Json& obj, const Names& n) {
  auto it = obj.find(n("conversations"));
  if (it == obj.end() || it->is_null()) {
    return InvalidArgumentError("missing " + n.Describe("conversations") +
                                "; add it, or map the name this file uses with "
                                "spec.data.fields.conversations");
  }
  if (!it->is_array() || it->empty()) {
    return InvalidArgumentError(n.Describe("conversations") +
                                " must be a non-empty list of {from, value} turns");
  }
  std::string system;
  SKRULL_RETURN_IF_ERROR(GetString(obj, n, "system", false, &system));
  Json messages = Json::array();
  if (!system.empty()) messages.push_back(Message("system", system));
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& turn = (*it)[i];
    if (!turn.is_object()) {
      return InvalidArgumentError(n.Describe("conversations") + "[" + std::to_string(i) +
                                  "] must be an object {from, value}");
    }
    std::string from, value;
    SKRULL_RETURN_IF_ERROR(GetString(turn, n, "from", true, &from));
    SKRULL_RETURN_IF_ERROR(GetString(turn, n, "value", true, &value));
    SKRULL_ASSIGN_OR_RETURN(const char* role, ShareGptRole(from, i, n));
    messages.push_back(Message(role, std::move(value)));
  }
  return Json{{"messages", std::move(messages)}};
}

StatusOr<Json> FromMappedText(const Json& obj, const Names& n) {
  auto messages = obj.find(n("messages"));
  if (messages == obj.end() || !messages->is_array()) {
    std::string text;
    SKRULL_RETURN_IF_ERROR(GetString(obj, n, "text", true, &text));
    return Json{{"text", std::move(text)}};
  }
  Json out = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    if (!m.is_object()) {
      return InvalidArgumentError(n.Describe("messages") + "[" + std::to_string(i) +
                                  "] must be an object");
    }
    std::string role, content;
    SKRULL_RETURN_IF_ERROR(GetString(m, n, "role", true, &role));
    SKRULL_RETURN_IF_ERROR(GetString(m, n, "content", true, &content));
    out.push_back(Json{{"role", std::move(role)}, {"content", std::move(content)}});
  }
  return Json{{"messages", std::move(out)}};
}

}  // namespace

bool NeedsRewrite(api::DataFormat format, const std::map<std::string, std::string>& fields) {
  return format == api::DataFormat::kAlpaca || format == api::DataFormat::kShareGpt ||
         (format == api::DataFormat::kTextJsonl && !fields.empty());
}

StatusOr<std::string> RewriteAsTextRecord(std::string_view line, api::DataFormat format,
                                          const std::map<std::string, std::string>& fields) {
  const char* shape = format == api::DataFormat::kAlpaca
                          ? "an alpaca line is {\"instruction\", \"input\", \"output\"}"
                      : format == api::DataFormat::kShareGpt
                          ? "a sharegpt line is {\"conversations\": [{\"from\": \"human\", "
                            "\"value\": \"...\"}, {\"from\": \"gpt\", \"value\": \"...\"}]}"
                          : "a text-jsonl line is {\"text\"} or {\"messages\"}";
  SKRULL_RETURN_IF_ERROR(CheckJsonDepth(line, shape));
  Json obj = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded() || !obj.is_object()) {
    return InvalidArgumentError(std::string("not one JSON object (or not UTF-8); ") + shape);
  }
  const Names names(format == api::DataFormat::kAlpaca     ? "alpaca"
                    : format == api::DataFormat::kShareGpt ? "sharegpt"
                                                           : "text-jsonl",
                    fields);
  StatusOr<Json> record = format == api::DataFormat::kAlpaca     ? FromAlpaca(obj, names)
                          : format == api::DataFormat::kShareGpt ? FromShareGpt(obj, names)
                                                                 : FromMappedText(obj, names);
  if (!record.ok()) return record.status();
  return record->dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace skrull::data
