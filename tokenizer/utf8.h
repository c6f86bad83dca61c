// UTF-8 helpers shared by the tokenizer and the chat-template interpreter.
// Thread safety: pure functions.
#ifndef SKRULL_TOKENIZER_UTF8_H_
#define SKRULL_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace skrull::tokenizer {

// The byte offset of the first byte that does not start or continue a valid
// UTF-8 sequence (overlong forms, surrogates and code points past U+10FFFF are
// invalid), or std::string_view::npos when `text` is valid UTF-8.
size_t FindInvalidUtf8(std::string_view text);

// Decodes the code point starting at text[*pos] and advances *pos past it.
// REQUIRES: text is valid UTF-8 and *pos < text.size().
char32_t NextCodePoint(std::string_view text, size_t* pos);

// Appends the UTF-8 encoding of `cp` (REQUIRES: a Unicode scalar value).
void AppendUtf8(char32_t cp, std::string* out);

// Number of code points in valid UTF-8 `text`.
size_t CodePointCount(std::string_view text);

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_UTF8_H_
