// The byte-level alphabet of GPT-2 style BPE (Hugging Face ByteLevel): every
// byte value has one printable code point, so vocabulary keys in tokenizer.json
// are strings over these 256 characters. Bytes '!'..'~', U+00A1..U+00AC and
// U+00AE..U+00FF stand for themselves; the other 68 bytes map, in order, to
// U+0100 onwards (space -> U+0120 'Ġ', newline -> U+010A 'Ċ').
// Private to tokenizer/. Thread safety: pure functions.
#ifndef SKRULL_TOKENIZER_BYTE_LEVEL_H_
#define SKRULL_TOKENIZER_BYTE_LEVEL_H_

#include <optional>
#include <string>
#include <string_view>

namespace skrull::tokenizer {

// The code point that stands for byte `b`.
char32_t ByteLevelChar(unsigned char b);

// The bytes a byte-level string stands for, or nullopt when `text` (valid
// UTF-8) has a character outside the alphabet.
std::optional<std::string> DecodeByteLevel(std::string_view text);

// The byte-level string for raw `bytes` (what ByteLevel pre-tokenization
// produces; used in tests and messages).
std::string EncodeByteLevel(std::string_view bytes);

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_BYTE_LEVEL_H_
