#include "tokenizer/jinja/lexer.h"

#include <cstdlib>
#include <cstring>

#include "tokenizer/jinja/value.h"
#include "tokenizer/utf8.h"

namespace skrull::jinja {
namespace {

// \r\n and \r -> \n; one trailing newline dropped.
std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's str.rstrip() of text (Unicode whitespace).
size_t RstripEnd(std::string_view text) {
  size_t end = 0, pos = 0;
  while (pos < text.size()) {
    if (!IsPySpace(tokenizer::NextCodePoint(text, &pos))) end = pos;
  }
  return end;
}

// Length of the Unicode-whitespace run at the start of `text`.
size_t LeadingSpace(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t at = pos;
    if (!IsPySpace(tokenizer::NextCodePoint(text, &pos))) return at;
  }
  return text.size();
}

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Python's "unicode-escape" decoding of a string literal's body.
StatusOr<std::string> Unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    char e = body[++i];
    auto hex = [&](size_t n) -> StatusOr<char32_t> {
      if (i + n >= body.size()) {
        return InvalidArgumentError("line " + std::to_string(line) + ": truncated \\" +
                                    std::string(1, e) + " escape in a string literal");
      }
      std::string digits(body.substr(i + 1, n));
      char* end = nullptr;
      unsigned long v = std::strtoul(digits.c_str(), &end, 16);
      if (*end != '\0') {
        return InvalidArgumentError("line " + std::to_string(line) + ": bad \\" +
                                    std::string(1, e) + " escape in a string literal");
      }
      i += n;
      return static_cast<char32_t>(v);
    };
    switch (e) {
      case '\n':
        break;  // line continuation
      case '\\':
      case '\'':
      case '"':
        out += e;
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        SKRULL_ASSIGN_OR_RETURN(char32_t cp, hex(e == 'x' ? 2 : e == 'u' ? 4 : 8));
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return InvalidArgumentError("line " + std::to_string(line) +
                                      ": escape names no Unicode scalar value");
        }
        tokenizer::AppendUtf8(cp, &out);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k) {
            v = v * 8 + (body[++i] - '0');
          }
          tokenizer::AppendUtf8(static_cast<char32_t>(v), &out);
        } else {
          out += '\\';  // unknown escapes stay as written
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  StatusOr<std::vector<Token>> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t open = FindOpen(pos_);
      std::string text = src_.substr(pos_, open - pos_);
      const int text_line = line_;
      line_ += Count(pos_, open);
      if (open == src_.size()) {
        Emit(Token::Kind::kData, text);
        break;
      }
      const char kind = src_[open + 1];  // '{', '%' or '#'
      char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (sign == '+' && kind == '{') sign = '\0';  // "{{+" is no modifier
      if (sign == '-') {
        text.resize(RstripEnd(text));
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop spaces between the line start and the tag.
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_start > 0 || line_starting) && line_start < text.size() &&
            LeadingSpace(std::string_view(text).substr(line_start)) == text.size() - line_start) {
          text.resize(line_start);
        }
      }
      if (!text.empty()) tokens_.push_back({Token::Kind::kData, text, text_line});
      pos_ = open + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      line_ += Count(open, pos_);
      if (kind == '#') {
        SKRULL_RETURN_IF_ERROR(SkipComment());
      } else {
        SKRULL_RETURN_IF_ERROR(Tag(kind));
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    Emit(Token::Kind::kEof, "");
    return std::move(tokens_);
  }

 private:
  size_t FindOpen(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  int Count(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to && i < src_.size(); ++i) n += src_[i] == '\n';
    return n;
  }

  void Emit(Token::Kind kind, std::string value) {
    if (kind == Token::Kind::kData && value.empty()) return;
    tokens_.push_back({kind, std::move(value), line_});
  }

  Status Error(const std::string& what) const {
    return InvalidArgumentError("line " + std::to_string(line_) + ": " + what);
  }

  // After "-}}" / "-%}" all whitespace goes; after "%}" one newline
  // (trim_blocks); "+%}" keeps it.
  void AfterClose(char kind, char sign) {
    if (sign == '-') {
      size_t n = LeadingSpace(std::string_view(src_).substr(pos_));
      line_ += Count(pos_, pos_ + n);
      pos_ += n;
    } else if (sign != '+' && kind != '{' && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
  }

  Status SkipComment() {
    size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) return Error("unterminated comment {# ... #}");
    const char sign =
        close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
    line_ += Count(pos_, close + 2);
    pos_ = close + 2;
    AfterClose('#', sign);
    return OkStatus();
  }

  Status Tag(char kind) {
    const char close = kind == '{' ? '}' : '%';
    Emit(kind == '{' ? Token::Kind::kVarBegin : Token::Kind::kBlockBegin, "");
    while (true) {
      while (pos_ < src_.size() && std::strchr(" \t\n\r\f\v", src_[pos_]) != nullptr &&
             src_[pos_] != '\0') {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) return Error(kind == '{' ? "unterminated {{" : "unterminated {%");
      // The closing delimiter, with optional whitespace control.
      char sign = '\0';
      size_t at = pos_;
      const bool modifier = src_[at] == '-' || (src_[at] == '+' && kind != '{');
      if (modifier && at + 2 < src_.size() && src_[at + 1] == close && src_[at + 2] == '}') {
        sign = src_[at];
        ++at;
      }
      if (at + 1 < src_.size() && src_[at] == close && src_[at + 1] == '}') {
        pos_ = at + 2;
        Emit(kind == '{' ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "");
        AfterClose(kind, sign);
        return OkStatus();
      }
      SKRULL_RETURN_IF_ERROR(ExpressionToken());
    }
  }

  Status ExpressionToken() {
    const char c = src_[pos_];
    if (IsNameStart(c)) {
      size_t end = pos_;
      while (end < src_.size() && (IsNameStart(src_[end]) || IsDigit(src_[end]))) ++end;
      Emit(Token::Kind::kName, src_.substr(pos_, end - pos_));
      pos_ = end;
      return OkStatus();
    }
    if (IsDigit(c)) {
      size_t end = pos_;
      while (end < src_.size() && (IsDigit(src_[end]) || src_[end] == '_')) ++end;
      bool is_float = false;
      if (end + 1 < src_.size() && src_[end] == '.' && IsDigit(src_[end + 1])) {
        is_float = true;
        ++end;
        while (end < src_.size() && (IsDigit(src_[end]) || src_[end] == '_')) ++end;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && IsDigit(src_[e])) {
          is_float = true;
          end = e;
          while (end < src_.size() && IsDigit(src_[end])) ++end;
        }
      }
      std::string digits;
      for (size_t i = pos_; i < end; ++i) {
        if (src_[i] != '_') digits += src_[i];
      }
      Emit(is_float ? Token::Kind::kFloat : Token::Kind::kInt, digits);
      pos_ = end;
      return OkStatus();
    }
    if (c == '\'' || c == '"') {
      size_t i = pos_ + 1;
      while (i < src_.size() && src_[i] != c) i += src_[i] == '\\' ? 2 : 1;
      if (i >= src_.size()) return Error("unterminated string literal");
      SKRULL_ASSIGN_OR_RETURN(
          std::string value,
          Unescape(std::string_view(src_).substr(pos_ + 1, i - pos_ - 1), line_));
      line_ += Count(pos_, i);
      Emit(Token::Kind::kString, std::move(value));
      pos_ = i + 1;
      return OkStatus();
    }
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                       "/",  "%",  "~",  "(",  ")",  "[",  "]", "{", "}",
                                       ",",  ".",  ":",  "|",  "=",  "<",  ">", ";"};
    for (const char* op : kOps) {
      const std::string_view o(op);
      if (std::string_view(src_).substr(pos_, o.size()) == o) {
        Emit(Token::Kind::kOp, std::string(o));
        pos_ += o.size();
        return OkStatus();
      }
    }
    return Error("unexpected character '" + std::string(1, c) + "' in a tag");
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

StatusOr<std::vector<Token>> Lex(std::string_view source) {
  return Lexer(NormalizeNewlines(source)).Run();
}

}  // namespace skrull::jinja
