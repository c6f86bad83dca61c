// Tokenizer::FromJson: tokenizer.json -> the pipeline's parts, refusing what
// is not supported with the field and the type named.
#include <utility>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

namespace skrull::tokenizer {
namespace {

using Json = nlohmann::json;

// TemplateProcessing's "single" template -> ids before and after sequence A.
Status ParseTemplate(const Json& spec, PostProcessorIds* post) {
  const Json& single = spec.contains("single") ? spec["single"] : Json();
  const Json& specials = spec.contains("special_tokens") ? spec["special_tokens"] : Json();
  if (!single.is_array())
    return InvalidArgumentError("TemplateProcessing: \"single\" is not a list");
  bool seen_sequence = false;
  for (const Json& item : single) {
    if (item.contains("Sequence")) {
      if (seen_sequence) {
        return InvalidArgumentError("TemplateProcessing: \"single\" names a sequence twice");
      }
      seen_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken") || !item["SpecialToken"].contains("id")) {
      return InvalidArgumentError(
          "TemplateProcessing: an item of \"single\" is neither "
          "SpecialToken nor Sequence");
    }
    const std::string name = item["SpecialToken"]["id"].get<std::string>();
    if (!specials.contains(name) || !specials[name].contains("ids") ||
        !specials[name]["ids"].is_array()) {
      return InvalidArgumentError("TemplateProcessing: special token \"" + name +
                                  "\" is not in \"special_tokens\"");
    }
    auto& out = seen_sequence ? post->suffix : post->prefix;
    for (const Json& id : specials[name]["ids"]) {
      if (!id.is_number_integer()) {
        return InvalidArgumentError("TemplateProcessing: ids of \"" + name + "\" must be ints");
      }
      out.push_back(id.get<int32_t>());
    }
  }
  return OkStatus();
}

Status ParsePostProcessor(const Json& spec, PostProcessorIds* post) {
  if (spec.is_null()) return OkStatus();
  SKRULL_ASSIGN_OR_RETURN(const std::string type,
                          JsonFields(spec, "", "post_processor").OptionalString("type"));
  if (type == "ByteLevel") return OkStatus();  // trims offsets only
  if (type == "TemplateProcessing") return ParseTemplate(spec, post);
  if (type == "Sequence" && spec.contains("processors") && spec["processors"].is_array()) {
    for (const Json& child : spec["processors"]) {
      SKRULL_RETURN_IF_ERROR(ParsePostProcessor(child, post));
    }
    return OkStatus();
  }
  return InvalidArgumentError(
      "post_processor type \"" + type +
      "\" is not supported (supported: ByteLevel, TemplateProcessing, Sequence of them, or null)");
}

const Json& Field(const Json& doc, const char* key) {
  static const Json null_value;
  return doc.contains(key) ? doc[key] : null_value;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFile(const std::string& path) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return FromJson(text, path);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json_text,
                                                         const std::string& origin) {
  auto fail = [&](const Status& s) { return s.WithContext(origin); };
  Json doc = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(origin + ": not a tokenizer.json (not a JSON object)");
  }
  for (const char* key : {"truncation", "padding"}) {
    if (!Field(doc, key).is_null()) {
      return InvalidArgumentError(origin + ": " + key +
                                  " is set; set it to null (spec.data.maxLength and the "
                                  "scheduler decide lengths)");
    }
  }
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->origin_ = origin;
  auto normalizer = Normalizer::FromJson(Field(doc, "normalizer"));
  if (!normalizer.ok()) return fail(normalizer.status());
  t->normalizer_ = std::make_unique<Normalizer>(std::move(*normalizer));
  auto pre = PreTokenizer::FromJson(Field(doc, "pre_tokenizer"));
  if (!pre.ok()) return fail(pre.status());
  t->pre_tokenizer_ = std::move(*pre);
  if (!t->pre_tokenizer_->has_byte_level()) {
    return InvalidArgumentError(origin +
                                ": pre_tokenizer has no ByteLevel step; only byte-level BPE "
                                "tokenizers (Qwen2, Qwen2.5, Qwen3, Llama-3, GPT-2) are supported");
  }
  auto bpe = Bpe::FromJson(Field(doc, "model"));
  if (!bpe.ok()) return fail(bpe.status());
  t->bpe_ = std::move(*bpe);
  auto added = AddedTokens::FromJson(Field(doc, "added_tokens"), *t->normalizer_);
  if (!added.ok()) return fail(added.status());
  t->added_ = std::move(*added);
  t->post_ = std::make_unique<PostProcessorIds>();
  Status post = ParsePostProcessor(Field(doc, "post_processor"), t->post_.get());
  if (!post.ok()) return fail(post);
  t->end_id_ = t->bpe_->end_id();
  for (const AddedToken& a : t->added_->tokens()) t->end_id_ = std::max(t->end_id_, a.id + 1);
  for (int32_t id : t->post_->prefix) t->end_id_ = std::max(t->end_id_, id + 1);
  for (int32_t id : t->post_->suffix) t->end_id_ = std::max(t->end_id_, id + 1);
  return t;
}

}  // namespace skrull::tokenizer
