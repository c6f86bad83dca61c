// Private to tokenizer/: the parts of Tokenizer shared by tokenizer.cc (Encode)
// and tokenizer_json.cc (loading).
#ifndef SKRULL_TOKENIZER_TOKENIZER_INTERNAL_H_
#define SKRULL_TOKENIZER_TOKENIZER_INTERNAL_H_

#include <cstdint>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace skrull::tokenizer {

// What add_special_tokens wraps around a single sequence's ids.
struct PostProcessorIds {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_TOKENIZER_INTERNAL_H_
