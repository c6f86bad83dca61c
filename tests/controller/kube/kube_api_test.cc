#include "controller/kube/kube_api.h"

#include <gtest/gtest.h>

#include "common/http_server.h"
#include "controller/kube/kube_errors.h"
#include "controller/kube/rest_path.h"

namespace skrull::kube {
namespace {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return StatusObject(code, reason, message).dump();
}

TEST(HttpStatusToStatus, TwoHundredsAreOk) {
  EXPECT_TRUE(HttpStatusToStatus("GET", "/api/v1/x", 200, "{}").ok());
  EXPECT_TRUE(HttpStatusToStatus("POST", "/api/v1/x", 201, "").ok());
}

TEST(HttpStatusToStatus, MessageNamesVerbPathCodeReasonAndServerMessage) {
  Status s = HttpStatusToStatus("PUT", "/api/v1/namespaces/a/pods/p", 409,
                                StatusBody(409, "Conflict", "the object has been modified"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "PUT /api/v1/namespaces/a/pods/p: HTTP 409 Conflict: the object has been modified");
  EXPECT_TRUE(IsConflict(s));
  EXPECT_FALSE(IsAlreadyExists(s));
  EXPECT_FALSE(IsExpired(s));
}

TEST(HttpStatusToStatus, MapsCodesAsTheHeaderSays) {
  struct Case {
    int http;
    StatusCode code;
  };
  for (const Case& c : std::vector<Case>{{400, StatusCode::kInvalidArgument},
                                         {401, StatusCode::kFailedPrecondition},
                                         {403, StatusCode::kFailedPrecondition},
                                         {404, StatusCode::kNotFound},
                                         {409, StatusCode::kFailedPrecondition},
                                         {410, StatusCode::kUnavailable},
                                         {415, StatusCode::kInvalidArgument},
                                         {422, StatusCode::kInvalidArgument},
                                         {429, StatusCode::kUnavailable},
                                         {500, StatusCode::kUnavailable},
                                         {503, StatusCode::kUnavailable},
                                         {302, StatusCode::kInternal}}) {
    Status s = HttpStatusToStatus("GET", "/p", c.http, "");
    EXPECT_EQ(s.code(), c.code) << c.http << ": " << s;
    EXPECT_NE(s.message().find("HTTP " + std::to_string(c.http) + " "), std::string::npos) << s;
  }
}

TEST(HttpStatusToStatus, AlreadyExistsAndExpiredAreTold) {
  Status exists = HttpStatusToStatus("POST", "/p", 409,
                                     StatusBody(409, "AlreadyExists", "pods \"a\" already exists"));
  EXPECT_TRUE(IsAlreadyExists(exists));
  EXPECT_FALSE(IsConflict(exists));
  Status expired = HttpStatusToStatus("GET", "/p", 410, StatusBody(410, "Expired", "too old"));
  EXPECT_TRUE(IsExpired(expired));
  EXPECT_TRUE(IsExpired(HttpStatusToStatus("GET", "/p", 410, ""))) << "a bare 410 is expired too";
  EXPECT_FALSE(IsExpired(HttpStatusToStatus("GET", "/p", 500, "")));
}

TEST(HttpStatusToStatus, NonJsonBodyIsQuotedShortened) {
  Status s = HttpStatusToStatus("GET", "/p", 502, "<html>bad gateway</html>\n");
  EXPECT_EQ(s.message(), "GET /p: HTTP 502 InternalError: <html>bad gateway</html>");
  Status long_body = HttpStatusToStatus("GET", "/p", 500, std::string(1000, 'x'));
  EXPECT_LT(long_body.message().size(), 400u);
}

TEST(HttpStatusToStatus, UnauthorizedSaysToCheckTheToken) {
  Status s = HttpStatusToStatus("GET", "/p", 401, StatusBody(401, "Unauthorized", "Unauthorized"));
  EXPECT_NE(s.message().find("bearer token was rejected"), std::string::npos) << s;
}

TEST(KubeErrors, ParseKubeErrorInvertsHttpStatusToStatus) {
  Status s = KubeError("PATCH", "/apis/g/v/namespaces/n/xs/a", 422, "Invalid", "bad: thing");
  KubeErrorParts parts = ParseKubeError(s);
  EXPECT_EQ(parts.code, 422);
  EXPECT_EQ(parts.reason, "Invalid");
  EXPECT_EQ(parts.message, "bad: thing");
  parts = ParseKubeError(UnavailableError("connection refused"));
  EXPECT_EQ(parts.code, 503);
  EXPECT_EQ(parts.message, "connection refused");
}

TEST(RestPath, BuildsAndParsesNamespacedAndClusterWidePaths) {
  EXPECT_EQ(ObjectPath(PodsResource(), "ns", "p", true), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(CollectionPath(SkrullJobsResource(), ""), "/apis/skrull.io/v1alpha1/skrulljobs");
  auto p = ParseResourcePath("/apis/skrull.io/v1alpha1/namespaces/ns/skrulljobs/j/status");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->prefix, "/apis/skrull.io/v1alpha1");
  EXPECT_EQ(p->ns, "ns");
  EXPECT_EQ(p->plural, "skrulljobs");
  EXPECT_EQ(p->name, "j");
  EXPECT_TRUE(p->status);
  p = ParseResourcePath("/api/v1/pods");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->ns, "");
  EXPECT_EQ(p->plural, "pods");
  EXPECT_FALSE(ParseResourcePath("/api/v1/namespaces/ns/pods/p/log").has_value());
  EXPECT_FALSE(ParseResourcePath("/healthz").has_value());
  EXPECT_FALSE(ParseResourcePath("/api/v1/pods/p").has_value()) << "objects are namespaced";
}

TEST(RestPath, QueryEscapeRoundTrips) {
  const std::string selector = "a in (x,y),b!=c,!d";
  EXPECT_EQ(http::PercentDecode(QueryEscape(selector), true), selector);
  auto q = ParseQuery("watch=1&labelSelector=" + QueryEscape(selector) + "&x=a+b");
  EXPECT_EQ(q["watch"], "1");
  EXPECT_EQ(q["labelSelector"], selector);
  EXPECT_EQ(q["x"], "a b");
}

}  // namespace
}  // namespace skrull::kube
