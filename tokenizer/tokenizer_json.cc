// Tokenizer::FromJson: tokenizer.json -> the pipeline's parts, refusing what
// is not supported with the field and the type named. Every field is read
// through JsonFields (common/json_fields.h), so a value of the wrong type is
// an error naming its path, never an exception.
#include <algorithm>
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
// Ids must be below `id_end` (the vocabulary and added tokens present).
Status ParseTemplate(const JsonFields& f, int32_t id_end, PostProcessorIds* post) {
  SKRULL_ASSIGN_OR_RETURN(const Json* single, f.RequiredArray("single"));
  SKRULL_ASSIGN_OR_RETURN(const Json* specials, f.OptionalObject("special_tokens"));
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const JsonFields item = f.Nested("single[" + std::to_string(i) + "]", (*single)[i]);
    SKRULL_ASSIGN_OR_RETURN(const Json* sequence, item.OptionalObject("Sequence"));
    if (sequence != nullptr) {
      if (seen_sequence) return item.Error("", "names a sequence twice");
      seen_sequence = true;
      continue;
    }
    SKRULL_ASSIGN_OR_RETURN(const Json* special, item.OptionalObject("SpecialToken"));
    if (special == nullptr) {
      return item.Error("", "must be {\"SpecialToken\": ...} or {\"Sequence\": ...}",
                        &(*single)[i]);
    }
    SKRULL_ASSIGN_OR_RETURN(const std::string name,
                            item.Nested("SpecialToken", *special).RequiredString("id"));
    const auto entry = specials != nullptr ? specials->find(name) : Json::const_iterator();
    if (specials == nullptr || entry == specials->end()) {
      return item.Error("SpecialToken.id", "\"" + name + "\" is not in special_tokens");
    }
    const JsonFields token = f.Nested("special_tokens." + name, *entry);
    SKRULL_ASSIGN_OR_RETURN(const Json* ids, token.RequiredArray("ids"));
    auto& out = seen_sequence ? post->suffix : post->prefix;
    for (size_t k = 0; k < ids->size(); ++k) {
      const Json& id = (*ids)[k];
      if (!IsIdBelow(id, id_end)) {
        return token.Error("ids[" + std::to_string(k) + "]",
                           "must be a token id in [0, " + std::to_string(id_end) +
                               ") (the vocabulary and added tokens of this file)",
                           &id);
      }
      out.push_back(id.get<int32_t>());
    }
  }
  return OkStatus();
}

// A post_processor (or an element of a Sequence of them) at `path`.
Status ParsePostProcessor(const Json& spec, const std::string& path, int depth, int32_t id_end,
                          PostProcessorIds* post) {
  const JsonFields f(spec, "", path);
  SKRULL_ASSIGN_OR_RETURN(const std::string type, ComponentType(f, spec, depth));
  if (type == "ByteLevel") return OkStatus();  // trims offsets only
  if (type == "TemplateProcessing") return ParseTemplate(f, id_end, post);
  if (type == "Sequence") {
    SKRULL_ASSIGN_OR_RETURN(const Json* list, f.RequiredArray("processors"));
    for (size_t i = 0; i < list->size(); ++i) {
      SKRULL_RETURN_IF_ERROR(ParsePostProcessor(
          (*list)[i], f.Path("processors[" + std::to_string(i) + "]"), depth + 1, id_end, post));
    }
    return OkStatus();
  }
  return f.Error("type", "\"" + type +
                             "\" is not supported (supported: ByteLevel, TemplateProcessing, "
                             "Sequence of them, or null)");
}

size_t SizeOf(const Json* v) { return v == nullptr ? 0 : v->size(); }

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFile(const std::string& path) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return FromJson(text, path);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json_text,
                                                         const std::string& origin) {
  auto fail = [&](const Status& s) { return s.WithContext(origin); };
  // The components nest (Sequence in Sequence) and are read recursively.
  if (auto deep = FindJsonNestingBeyond(json_text, kMaxJsonDepth)) {
    return InvalidArgumentError(origin + ":" + std::to_string(deep->line) +
                                ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                " levels (byte " + std::to_string(deep->offset) +
                                "); real tokenizer.json files nest a few levels");
  }
  Json doc = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(origin + ": not a tokenizer.json (not a JSON object)");
  }
  const JsonFields f(doc, "");
  for (const char* key : {"truncation", "padding"}) {
    auto set = f.OptionalObject(key);
    if (!set.ok()) return fail(set.status());
    if (*set != nullptr) {
      return fail(f.Error(key,
                          "is set; set it to null (spec.data.maxLength and the scheduler "
                          "decide lengths)"));
    }
  }
  auto normalizer_spec = f.OptionalObject("normalizer");
  auto pre_spec = f.OptionalObject("pre_tokenizer");
  auto model_spec = f.RequiredObject("model");
  auto added_spec = f.OptionalArray("added_tokens");
  auto post_spec = f.OptionalObject("post_processor");
  for (const auto* s : {&normalizer_spec, &pre_spec, &model_spec, &added_spec, &post_spec}) {
    if (!s->ok()) return fail(s->status());
  }
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->origin_ = origin;
  auto normalizer = Normalizer::FromJson(*normalizer_spec ? **normalizer_spec : Json());
  if (!normalizer.ok()) return fail(normalizer.status());
  t->normalizer_ = std::make_unique<Normalizer>(std::move(*normalizer));
  auto pre = PreTokenizer::FromJson(*pre_spec ? **pre_spec : Json());
  if (!pre.ok()) return fail(pre.status());
  t->pre_tokenizer_ = std::move(*pre);
  if (!t->pre_tokenizer_->has_byte_level()) {
    return InvalidArgumentError(origin +
                                ": pre_tokenizer has no ByteLevel step; only byte-level BPE "
                                "tokenizers (Qwen2, Qwen2.5, Qwen3, Llama-3, GPT-2) are supported");
  }
  // Ids index tables: they are bounded by the number of tokens the file
  // holds, not by the largest number written in it.
  const Json* vocab = (*model_spec)->contains("vocab") ? &(**model_spec)["vocab"] : nullptr;
  const int32_t id_bound = IdBound(SizeOf(vocab) + SizeOf(*added_spec));
  auto bpe = Bpe::FromJson(**model_spec, id_bound);
  if (!bpe.ok()) return fail(bpe.status());
  t->bpe_ = std::move(*bpe);
  auto added =
      AddedTokens::FromJson(*added_spec ? **added_spec : Json(), *t->normalizer_, id_bound);
  if (!added.ok()) return fail(added.status());
  t->added_ = std::move(*added);
  t->end_id_ = t->bpe_->end_id();
  for (const AddedToken& a : t->added_->tokens()) t->end_id_ = std::max(t->end_id_, a.id + 1);
  t->post_ = std::make_unique<PostProcessorIds>();
  if (*post_spec != nullptr) {
    Status post = ParsePostProcessor(**post_spec, "post_processor", 1, t->end_id_, t->post_.get());
    if (!post.ok()) return fail(post);
  }
  return t;
}

}  // namespace skrull::tokenizer
