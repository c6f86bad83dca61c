// Private to tokenizer/: the parts of Tokenizer shared by tokenizer.cc (Encode)
// and tokenizer_json.cc (loading).
#ifndef SKRULL_TOKENIZER_TOKENIZER_INTERNAL_H_
#define SKRULL_TOKENIZER_TOKENIZER_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_fields.h"
#include "common/status.h"

#include "tokenizer/tokenizer.h"

namespace skrull::tokenizer {

// tokenizer.json may nest JSON this deep (checked on the text, before it is
// parsed; real files nest a few levels).
inline constexpr int kMaxJsonDepth = 64;
// Sequences of normalizers, pre-tokenizers or post-processors may nest this
// deep.
inline constexpr int kMaxComponentDepth = 16;
// The "type" of a component (normalizer, pre-tokenizer, post-processor) read
// by `f`, `depth` Sequences deep: an error when `spec` is not an object or
// nests deeper than kMaxComponentDepth.
inline StatusOr<std::string> ComponentType(const JsonFields& f, const nlohmann::json& spec,
                                           int depth) {
  if (!spec.is_object()) return f.Error("", "must be an object with a \"type\"", &spec);
  if (depth > kMaxComponentDepth) {
    return f.Error(
        "", "Sequences nested deeper than " + std::to_string(kMaxComponentDepth) + " levels");
  }
  return f.RequiredString("type");
}

// Token ids index tables (the byte length of each token), so they are bounded
// by what the file holds, not by the largest number written in it: below
// twice the number of tokens in model.vocab and added_tokens plus 1024 (real
// files number their tokens densely from 0; the slack allows gaps), and below
// 2^30.
inline constexpr size_t kMaxTokenId = size_t{1} << 30;
inline int32_t IdBound(size_t tokens_held) {
  return static_cast<int32_t>(std::min(2 * tokens_held + 1024, kMaxTokenId));
}
// Whether a JSON value is an integer in [0, end).
inline bool IsIdBelow(const nlohmann::json& v, int32_t end) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() < static_cast<uint64_t>(end);
  return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < end;
}
inline std::string IdBoundText(int32_t bound) {
  return "[0, " + std::to_string(bound) +
         ") (ids are bounded by the tokens the file holds: twice the entries of model.vocab and "
         "added_tokens, plus 1024)";
}

// What add_special_tokens wraps around a single sequence's ids.
struct PostProcessorIds {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_TOKENIZER_INTERNAL_H_
