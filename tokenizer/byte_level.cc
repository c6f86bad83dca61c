#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace skrull::tokenizer {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int, 512> to_byte{};  // code point < 512 -> byte, -1 when none
  Tables() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = self ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = b;
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

char32_t ByteLevelChar(unsigned char b) { return GetTables().to_char[b]; }

std::optional<std::string> DecodeByteLevel(std::string_view text) {
  const Tables& t = GetTables();
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = NextCodePoint(text, &pos);
    if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(t.to_byte[cp]));
  }
  return out;
}

std::string EncodeByteLevel(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) AppendUtf8(ByteLevelChar(b), &out);
  return out;
}

}  // namespace skrull::tokenizer
