// Fuzz target: the HTTP request-head parser behind every HttpServer
// (common/http_request.h). Any bytes must end in a parsed head or an error
// that maps to 400, 413 or 501, never a crash; FindHeadEnd finds the same
// end whole or in two reads; a parsed head keeps its Content-Length within
// the cap, its path a prefix of its target and its header names lower-case.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxBody = 16 * 1024;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t end = skrull::http::FindHeadEnd(input);
  const size_t split = size / 2;
  const size_t first = skrull::http::FindHeadEnd(input.substr(0, split));
  const size_t incremental =
      first != std::string_view::npos ? first : skrull::http::FindHeadEnd(input, split);
  SKRULL_CHECK(incremental == end) << "whole " << end << ", in two reads " << incremental;
  SKRULL_CHECK(end == std::string_view::npos || end <= size);

  const std::string_view head = end == std::string_view::npos ? input : input.substr(0, end);
  skrull::StatusOr<skrull::http::ParsedHead> parsed =
      skrull::http::ParseRequestHead(head, kMaxBody);
  if (!parsed.ok()) {
    const int status = skrull::http::HttpStatusForParseError(parsed.status());
    SKRULL_CHECK(status == 400 || status == 413 || status == 501) << status;
    SKRULL_CHECK(parsed.status().message().size() < 512) << "echoes too much of the input";
    return 0;
  }
  const skrull::http::HttpRequest& req = parsed->request;
  SKRULL_CHECK(parsed->content_length <= kMaxBody) << parsed->content_length;
  SKRULL_CHECK(!req.method.empty() && !req.target.empty());
  SKRULL_CHECK(req.target.rfind(req.path, 0) == 0) << req.path << " not a prefix of " << req.target;
  for (const auto& [name, value] : req.headers) {
    SKRULL_CHECK(!name.empty());
    for (char c : name) SKRULL_CHECK(!std::isupper(static_cast<unsigned char>(c))) << name;
    SKRULL_CHECK(value.find_first_of("\r\n") == std::string::npos) << value;
  }
  return 0;
}
