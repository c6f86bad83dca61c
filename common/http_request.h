// HttpRequest and the strict parser of an HTTP/1.x request head, kept free
// of sockets so it can be unit-tested and fuzzed (fuzz/http_request_fuzzer.cc).
// common/http_server.h feeds it the bytes a client sent.
//
// What "strict" means here (RFC 9112, minus what no client of ours sends):
//   * request line: METHOD SP TARGET SP HTTP/1.<digit>, single spaces; the
//     method a token, the target visible ASCII (0x21-0x7E) only;
//   * header lines: NAME ":" OWS VALUE OWS, the name a token with no space
//     before the colon; values without control characters (tab allowed);
//     no obsolete line folding; lines end in CRLF or a bare LF;
//   * Content-Length: one or more ASCII digits and nothing else (no sign,
//     no list), no larger than 2^64-1; repeated headers must agree;
//   * Transfer-Encoding in a request is not supported (no chunked bodies).
//
// Thread safety: pure functions; HttpRequest is a value.
#ifndef SKRULL_COMMON_HTTP_REQUEST_H_
#define SKRULL_COMMON_HTTP_REQUEST_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace skrull::http {

struct HttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // as sent: "/api/v1/pods?watch=1"
  std::string path;    // `target` up to '?', not percent-decoded
  std::string query;   // after '?', not decoded; "" when none
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;

  // The first header named `lower_case_name`, or nullptr.
  const std::string* Header(const std::string& lower_case_name) const;
};

// A request head, parsed: everything but the body, and how long the body is.
struct ParsedHead {
  HttpRequest request;           // body empty
  size_t content_length = 0;     // bytes of body that follow the head
  bool expect_continue = false;  // "Expect: 100-continue" was sent
};

// Index just past the blank line that ends a request head in `data`
// ("\r\n\r\n", or "\n\n" from lenient clients), or std::string_view::npos
// when the head is not complete yet. Bytes before `from` were searched by an
// earlier call on a shorter prefix of the same data (incremental reads pass
// the previous size; the search backs up over a terminator split by a read).
size_t FindHeadEnd(std::string_view data, size_t from = 0);

// Parses `head` (a request head through its blank line, as FindHeadEnd
// delimits it) strictly, as the file comment says. `max_body_bytes` caps
// Content-Length. Errors, each naming the line or header and what is wrong:
//   InvalidArgument     -> 400: malformed request line, header line, or
//                          Content-Length (-1, abc, 1e3, "5, 5", a value past
//                          2^64-1, or repeated headers that disagree);
//   ResourceExhausted   -> 413: Content-Length above `max_body_bytes`;
//   FailedPrecondition  -> 501: a Transfer-Encoding header.
StatusOr<ParsedHead> ParseRequestHead(std::string_view head, size_t max_body_bytes);

// The HTTP status that answers a ParseRequestHead error (400, 413 or 501);
// 400 for codes it does not produce.
int HttpStatusForParseError(const Status& error);

}  // namespace skrull::http

#endif  // SKRULL_COMMON_HTTP_REQUEST_H_
