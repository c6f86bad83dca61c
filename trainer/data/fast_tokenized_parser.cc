// FastParseTokenizedLine: indexing a tokenized-jsonl file is dominated by
// parsing integer arrays, and a DOM allocates a node per id. This scanner
// parses ids straight into vectors and validates the rest of the line as JSON,
// bailing out (returning false) on anything unusual so that the DOM parser,
// the reference, decides and explains.
#include <cstdint>
#include <cstring>
#include <limits>

#include "trainer/data/jsonl_record.h"

namespace skrull::data {

namespace {

constexpr int kMaxDepth = 64;

class Scanner {
 public:
  explicit Scanner(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  bool AtEnd() const { return p_ == end_; }

  void SkipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool Consume(char c) {
    if (p_ != end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  bool Peek(char c) const { return p_ != end_ && *p_ == c; }

  // A key: printable ASCII, no escapes (anything else -> bail).
  bool Key(std::string_view* key) {
    if (!Consume('"')) return false;
    const char* start = p_;
    while (p_ != end_) {
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *key = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
      ++p_;
    }
    return false;
  }

  // An array of JSON integers, each in int32 range.
  bool IntArray(std::vector<int32_t>* out) {
    out->clear();
    if (!Consume('[')) return false;
    SkipSpace();
    if (Consume(']')) return true;
    while (true) {
      int32_t v;
      if (!Int(&v)) return false;
      out->push_back(v);
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
        continue;
      }
      return Consume(']');
    }
  }

  bool Literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  // Any JSON value, validated and discarded.
  bool SkipValue(int depth) {
    if (depth > kMaxDepth || p_ == end_) return false;
    switch (*p_) {
      case '"':
        return SkipString();
      case '{':
        return SkipObject(depth + 1);
      case '[':
        return SkipArray(depth + 1);
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return SkipNumber();
    }
  }

 private:
  // JSON integer grammar: -?(0|[1-9][0-9]*), not followed by a fraction or
  // an exponent (those are not token ids; the DOM path explains).
  bool Int(int32_t* out) {
    bool negative = Consume('-');
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0' && p_ + 1 != end_ && p_[1] >= '0' && p_[1] <= '9') return false;
    int64_t v = 0;
    int digits = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      if (++digits > 10) return false;
      v = v * 10 + (*p_ - '0');
      ++p_;
    }
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    if (negative) v = -v;
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    *out = static_cast<int32_t>(v);
    return true;
  }

  // ASCII strings with simple escapes; \u escapes and non-ASCII bytes go to
  // the DOM, which checks surrogates and UTF-8.
  bool SkipString() {
    if (!Consume('"')) return false;
    while (p_ != end_) {
      unsigned char c = static_cast<unsigned char>(*p_++);
      if (c == '"') return true;
      if (c < 0x20 || c >= 0x80) return false;
      if (c == '\\') {
        if (p_ == end_) return false;
        char e = *p_++;
        if (std::strchr("\"\\/bfnrt", e) == nullptr || e == '\0') return false;
      }
    }
    return false;
  }

  bool Digits() {
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return true;
  }

  // Exponents and long mantissas go to the DOM, which rejects numbers that
  // overflow a double (1e999).
  bool SkipNumber() {
    const char* start = p_;
    Consume('-');
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    if (Consume('.') && !Digits()) return false;
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) return false;
    return p_ - start <= 20;
  }

  bool SkipArray(int depth) {
    if (!Consume('[')) return false;
    SkipSpace();
    if (Consume(']')) return true;
    while (true) {
      if (!SkipValue(depth)) return false;
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
        continue;
      }
      return Consume(']');
    }
  }

  bool SkipObject(int depth) {
    if (!Consume('{')) return false;
    SkipSpace();
    if (Consume('}')) return true;
    while (true) {
      std::string_view key;
      if (!Key(&key)) return false;
      SkipSpace();
      if (!Consume(':')) return false;
      SkipSpace();
      if (!SkipValue(depth)) return false;
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
        continue;
      }
      return Consume('}');
    }
  }

  const char* p_;
  const char* end_;
};

}  // namespace

bool FastParseTokenizedLine(std::string_view line, TokenRecord* record) {
  Scanner s(line);
  bool seen_ids = false;
  bool seen_labels = false;
  record->has_labels = false;
  record->labels.clear();
  s.SkipSpace();
  if (!s.Consume('{')) return false;
  s.SkipSpace();
  if (!s.Peek('}')) {
    while (true) {
      std::string_view key;
      if (!s.Key(&key)) return false;
      s.SkipSpace();
      if (!s.Consume(':')) return false;
      s.SkipSpace();
      if (key == "input_ids") {
        if (seen_ids || !s.IntArray(&record->input_ids)) return false;
        seen_ids = true;
      } else if (key == "labels") {
        if (seen_labels) return false;
        seen_labels = true;
        if (s.Literal("null")) {
          record->has_labels = false;
        } else if (s.IntArray(&record->labels)) {
          record->has_labels = true;
        } else {
          return false;
        }
      } else if (!s.SkipValue(1)) {
        return false;
      }
      s.SkipSpace();
      if (s.Consume(',')) {
        s.SkipSpace();
        continue;
      }
      if (s.Peek('}')) break;
      return false;
    }
  }
  s.Consume('}');
  s.SkipSpace();
  return seen_ids && s.AtEnd();
}

}  // namespace skrull::data
