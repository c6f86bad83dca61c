#include "tokenizer/normalizer.h"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

#include "common/json_fields.h"
#include "tokenizer/tokenizer_internal.h"

namespace skrull::tokenizer {
namespace {

Status AddForms(const nlohmann::json& spec, const std::string& path, int depth,
                std::vector<Normalizer::Form>* forms) {
  if (spec.is_null()) return OkStatus();
  const JsonFields f(spec, "", path);
  SKRULL_ASSIGN_OR_RETURN(const std::string type, ComponentType(f, spec, depth));
  if (type == "NFC") {
    forms->push_back(Normalizer::Form::kNfc);
  } else if (type == "NFD") {
    forms->push_back(Normalizer::Form::kNfd);
  } else if (type == "NFKC") {
    forms->push_back(Normalizer::Form::kNfkc);
  } else if (type == "NFKD") {
    forms->push_back(Normalizer::Form::kNfkd);
  } else if (type == "Sequence") {
    SKRULL_ASSIGN_OR_RETURN(const nlohmann::json* list, f.RequiredArray("normalizers"));
    for (size_t i = 0; i < list->size(); ++i) {
      SKRULL_RETURN_IF_ERROR(
          AddForms((*list)[i], f.Path("normalizers[" + std::to_string(i) + "]"), depth + 1, forms));
    }
  } else {
    return f.Error("type", "\"" + type +
                               "\" is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence "
                               "of them, or null)");
  }
  return OkStatus();
}

utf8proc_option_t Options(Normalizer::Form form) {
  switch (form) {
    case Normalizer::Form::kNfc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    case Normalizer::Form::kNfd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    case Normalizer::Form::kNfkc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case Normalizer::Form::kNfkd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return UTF8PROC_STABLE;
}

bool IsAscii(std::string_view text) {
  for (unsigned char c : text) {
    if (c >= 0x80) return false;
  }
  return true;
}

}  // namespace

StatusOr<Normalizer> Normalizer::FromJson(const nlohmann::json& spec) {
  Normalizer n;
  SKRULL_RETURN_IF_ERROR(AddForms(spec, "normalizer", 1, &n.forms_));
  return n;
}

bool Normalizer::Normalize(std::string_view text, std::string* out) const {
  // Every form maps ASCII to itself.
  if (forms_.empty() || IsAscii(text)) return false;
  std::string current(text);
  for (Form form : forms_) {
    utf8proc_uint8_t* result = nullptr;
    utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(current.data()),
                     static_cast<utf8proc_ssize_t>(current.size()), &result, Options(form));
    std::unique_ptr<utf8proc_uint8_t, void (*)(void*)> owned(result, std::free);
    // utf8proc fails only on invalid UTF-8 or out of memory; the input is valid.
    SKRULL_CHECK(n >= 0) << "utf8proc_map: " << utf8proc_errmsg(n);
    current.assign(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
  }
  if (current == text) return false;
  *out = std::move(current);
  return true;
}

}  // namespace skrull::tokenizer
