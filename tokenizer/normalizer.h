// The normalizers of tokenizer.json this tokenizer supports: Unicode
// normalization forms (NFC, NFD, NFKC, NFKD, through utf8proc) and Sequence
// of them; `null` is no normalizer. Qwen2 declares NFC; Llama-3 none.
// Private to tokenizer/. Thread safety: immutable after construction.
#ifndef SKRULL_TOKENIZER_NORMALIZER_H_
#define SKRULL_TOKENIZER_NORMALIZER_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace skrull::tokenizer {

class Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };

  // From the "normalizer" value of tokenizer.json. InvalidArgument naming
  // the type for normalizers that are not supported.
  static StatusOr<Normalizer> FromJson(const nlohmann::json& spec);

  bool empty() const { return forms_.empty(); }

  // Applies the forms in order. REQUIRES: `text` is valid UTF-8.
  // Returns false (and leaves *out untouched) when the text is unchanged, so
  // callers can keep using `text` and its offsets.
  bool Normalize(std::string_view text, std::string* out) const;

 private:
  std::vector<Form> forms_;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_NORMALIZER_H_
