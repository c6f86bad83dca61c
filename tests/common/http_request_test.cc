#include "common/http_request.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace skrull::http {
namespace {

constexpr size_t kMaxBody = 1024;

std::string Head(const std::string& headers) {
  return "POST /api?x=1 HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n";
}

// The HTTP status ParseRequestHead's error maps to, or 200 when it parses.
int StatusOf(const std::string& head) {
  StatusOr<ParsedHead> parsed = ParseRequestHead(head, kMaxBody);
  return parsed.ok() ? 200 : HttpStatusForParseError(parsed.status());
}

TEST(FindHeadEnd, FindsCrlfAndBareLfTerminators) {
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\n\r\nbody"), 18u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\n\nbody"), 16u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nA: b\r\n"), std::string_view::npos);
  EXPECT_EQ(FindHeadEnd(""), std::string_view::npos);
}

TEST(FindHeadEnd, FindsTerminatorSplitAcrossIncrementalReads) {
  const std::string data = "GET / HTTP/1.1\r\nA: b\r\n\r\n";
  for (size_t split = 0; split <= data.size(); ++split) {
    // First call on a prefix, second on the whole from where the first stopped.
    const size_t first = FindHeadEnd(std::string_view(data).substr(0, split));
    const size_t end = first != std::string_view::npos ? first : FindHeadEnd(data, split);
    EXPECT_EQ(end, data.size()) << "split at " << split;
  }
}

TEST(ParseRequestHead, ParsesRequestLineHeadersAndContentLength) {
  StatusOr<ParsedHead> parsed =
      ParseRequestHead(Head("Content-Length: 12\r\nX-Thing:  a b \r\n"), kMaxBody);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.method, "POST");
  EXPECT_EQ(parsed->request.target, "/api?x=1");
  EXPECT_EQ(parsed->request.path, "/api");
  EXPECT_EQ(parsed->request.query, "x=1");
  EXPECT_EQ(parsed->content_length, 12u);
  ASSERT_NE(parsed->request.Header("x-thing"), nullptr);
  EXPECT_EQ(*parsed->request.Header("x-thing"), "a b");
  EXPECT_FALSE(parsed->expect_continue);
}

TEST(ParseRequestHead, AcceptsBareLfLinesAndNoContentLength) {
  StatusOr<ParsedHead> parsed = ParseRequestHead("GET /metrics HTTP/1.0\nAccept: */*\n\n", 0);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.path, "/metrics");
  EXPECT_EQ(parsed->content_length, 0u);
}

TEST(ParseRequestHead, RejectsContentLengthThatIsNotDigitsWith400) {
  for (const char* value : {"-1", "abc", "", "+5", "1e3", "5, 5", "0x10", "5 5", "１"}) {
    EXPECT_EQ(StatusOf(Head(std::string("Content-Length: ") + value + "\r\n")), 400) << value;
  }
}

TEST(ParseRequestHead, RejectsContentLengthThatWrapsWith400) {
  // 2^64 + 1 would wrap to 1 in a 64-bit strtoull-style parse.
  for (const char* value :
       {"18446744073709551617", "18446744073709551616", "99999999999999999999999999999999"}) {
    StatusOr<ParsedHead> parsed =
        ParseRequestHead(Head(std::string("Content-Length: ") + value + "\r\n"), kMaxBody);
    ASSERT_FALSE(parsed.ok()) << value;
    EXPECT_EQ(HttpStatusForParseError(parsed.status()), 400) << value;
    EXPECT_NE(parsed.status().message().find("Content-Length"), std::string::npos);
  }
}

TEST(ParseRequestHead, RejectsDisagreeingDuplicateContentLengthWith400) {
  EXPECT_EQ(StatusOf(Head("Content-Length: 3\r\nContent-Length: 4\r\n")), 400);
  EXPECT_EQ(StatusOf(Head("Content-Length: 3\r\ncontent-length: 3\r\n")), 200);
}

TEST(ParseRequestHead, RejectsContentLengthOverTheBodyCapWith413) {
  EXPECT_EQ(StatusOf(Head("Content-Length: 1024\r\n")), 200);
  EXPECT_EQ(StatusOf(Head("Content-Length: 1025\r\n")), 413);
  EXPECT_EQ(StatusOf(Head("Content-Length: 18446744073709551615\r\n")), 413);
}

TEST(ParseRequestHead, RejectsTransferEncodingWith501) {
  EXPECT_EQ(StatusOf(Head("Transfer-Encoding: chunked\r\n")), 501);
}

TEST(ParseRequestHead, RejectsMalformedRequestLinesWith400) {
  for (const char* head : {"GET /\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1 \r\n\r\n",
                           "GET / HTTP/2.0\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n",
                           "GET /a\x01 HTTP/1.1\r\n\r\n", "GET /\xc3\xa9 HTTP/1.1\r\n\r\n",
                           "GET / FTP/1.1\r\n\r\n", "\r\n\r\n", "GET /\r HTTP/1.1\r\n\r\n"}) {
    EXPECT_EQ(StatusOf(head), 400) << head;
  }
}

TEST(ParseRequestHead, RejectsMalformedHeaderLinesWith400) {
  for (const char* line : {"NoColon\r\n", "Name : v\r\n", ": v\r\n", " folded: v\r\n",
                           "A: b\x01\r\n", "A: b\rc\r\n", "A\tB: c\r\n"}) {
    EXPECT_EQ(StatusOf(Head(line)), 400) << line;
  }
}

TEST(ParseRequestHead, NotesExpectContinue) {
  StatusOr<ParsedHead> parsed =
      ParseRequestHead(Head("Expect: 100-Continue\r\nContent-Length: 5\r\n"), kMaxBody);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->expect_continue);
}

TEST(ParseRequestHead, EchoesAtMostAShortPrintablePartOfTheInput) {
  StatusOr<ParsedHead> parsed =
      ParseRequestHead("GET " + std::string(10000, '\x01') + " HTTP/1.1\r\n\r\n", kMaxBody);
  ASSERT_FALSE(parsed.ok());
  EXPECT_LT(parsed.status().message().size(), 200u) << parsed.status();
}

}  // namespace
}  // namespace skrull::http
