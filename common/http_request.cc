#include "common/http_request.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

namespace skrull::http {

namespace {

// RFC 9110 tchar.
bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) || (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return IsTokenChar(static_cast<unsigned char>(c));
  });
}

// Field values: visible characters, obs-text, space and tab; no controls.
bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// What a message may echo of the client's bytes: short and printable.
std::string Shown(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out;
  for (char ch : s.substr(0, kMax)) {
    const auto c = static_cast<unsigned char>(ch);
    out += c >= 0x20 && c < 0x7f ? ch : '?';
  }
  if (s.size() > kMax) out += "...";
  return "\"" + out + "\"";
}

// Splits the next line off `rest` (without its CRLF or LF). False when a
// bare CR sits inside the line.
bool NextLine(std::string_view* rest, std::string_view* line) {
  const size_t lf = rest->find('\n');
  std::string_view l = rest->substr(0, lf);
  *rest = lf == std::string_view::npos ? std::string_view() : rest->substr(lf + 1);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  *line = l;
  return l.find('\r') == std::string_view::npos;
}

Status ParseRequestLine(std::string_view line, HttpRequest* req) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return InvalidArgumentError("request line " + Shown(line) +
                                ": want METHOD SP TARGET SP HTTP/1.x, single spaces");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) {
    return InvalidArgumentError("request line " + Shown(line) + ": the method is not a token");
  }
  const bool visible = std::all_of(target.begin(), target.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (target.empty() || !visible) {
    return InvalidArgumentError("request line " + Shown(line) +
                                ": the target must be visible ASCII; percent-encode the rest");
  }
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1." ||
      !std::isdigit(static_cast<unsigned char>(version[7]))) {
    return InvalidArgumentError("request line " + Shown(line) + ": the version must be HTTP/1.x");
  }
  req->method = std::string(method);
  req->target = std::string(target);
  const size_t q = target.find('?');
  req->path = std::string(target.substr(0, q));
  req->query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  return OkStatus();
}

// 1*DIGIT, checked for overflow.
std::optional<uint64_t> ParseDigits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

}  // namespace

const std::string* HttpRequest::Header(const std::string& lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) return &value;
  }
  return nullptr;
}

size_t FindHeadEnd(std::string_view data, size_t from) {
  const size_t start = from > 3 ? from - 3 : 0;
  for (size_t i = data.find('\n', start); i != std::string_view::npos; i = data.find('\n', i + 1)) {
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

StatusOr<ParsedHead> ParseRequestHead(std::string_view head, size_t max_body_bytes) {
  ParsedHead parsed;
  std::string_view rest = head;
  std::string_view line;
  // RFC 9112 2.2: ignore empty lines before the request line.
  do {
    if (!NextLine(&rest, &line)) {
      return InvalidArgumentError("request line " + Shown(line) + ": a bare CR in the line");
    }
  } while (line.empty() && !rest.empty());
  SKRULL_RETURN_IF_ERROR(ParseRequestLine(line, &parsed.request));
  std::optional<uint64_t> content_length;
  while (!rest.empty()) {
    if (!NextLine(&rest, &line)) {
      return InvalidArgumentError("header line " + Shown(line) + ": a bare CR in the line");
    }
    if (line.empty()) break;  // the blank line that ends the head
    if (line.front() == ' ' || line.front() == '\t') {
      return InvalidArgumentError("header line " + Shown(line) +
                                  ": obsolete line folding; send each header on one line");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return InvalidArgumentError("header line " + Shown(line) +
                                  ": want NAME: VALUE with a token name and no space before ':'");
    }
    const std::string_view value = TrimOws(line.substr(colon + 1));
    if (!IsFieldValue(value)) {
      return InvalidArgumentError("header line " + Shown(line) +
                                  ": control characters in the value");
    }
    std::string name = Lower(line.substr(0, colon));
    if (name == "content-length") {
      const std::optional<uint64_t> n = ParseDigits(value);
      if (!n) {
        return InvalidArgumentError("Content-Length " + Shown(value) +
                                    ": must be a decimal number of bytes below 2^64 (digits only)");
      }
      if (content_length && *content_length != *n) {
        return InvalidArgumentError("Content-Length: repeated with different values (" +
                                    std::to_string(*content_length) + " and " + std::to_string(*n) +
                                    "); send it once");
      }
      content_length = n;
    } else if (name == "transfer-encoding") {
      return FailedPreconditionError(
          "Transfer-Encoding: chunked request bodies are not supported; send Content-Length");
    } else if (name == "expect" && Lower(value) == "100-continue") {
      parsed.expect_continue = true;
    }
    parsed.request.headers.emplace_back(std::move(name), std::string(value));
  }
  if (content_length && *content_length > max_body_bytes) {
    return ResourceExhaustedError("Content-Length " + std::to_string(*content_length) +
                                  ": the body may be at most " + std::to_string(max_body_bytes) +
                                  " bytes");
  }
  parsed.content_length = content_length ? static_cast<size_t>(*content_length) : 0;
  return parsed;
}

int HttpStatusForParseError(const Status& error) {
  switch (error.code()) {
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kFailedPrecondition:
      return 501;
    default:
      return 400;
  }
}

}  // namespace skrull::http
