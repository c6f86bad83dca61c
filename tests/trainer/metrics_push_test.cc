// PushFinal against a fake Pushgateway on loopback: method, path, body,
// errors and the timeout; and Pushgateway URL parsing.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/trainer/metrics_testing.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/pushgateway.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::metrics {
namespace {

using ::skrull::testing::FakeHttpServer;
using ::skrull::testing::PickFreeLoopbackPort;
using ::skrull::testing::TestMetricsOptions;
using ::skrull::testing::TestStepRecord;

std::unique_ptr<TrainerMetrics> MakePusher(const std::string& url, double timeout_seconds = 10) {
  MetricsOptions o = TestMetricsOptions();
  o.pushgateway_url = url;
  o.push_timeout_seconds = timeout_seconds;
  StatusOr<std::unique_ptr<TrainerMetrics>> m = TrainerMetrics::Create(o);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(PushFinal, WithoutAUrlDoesNothing) {
  StatusOr<std::unique_ptr<TrainerMetrics>> m = TrainerMetrics::Create(TestMetricsOptions());
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE((*m)->PushFinal().ok());
}

TEST(PushFinal, PutsTheWholeExpositionToTheRanksGroup) {
  FakeHttpServer gateway(200);
  auto m = MakePusher(gateway.url() + "/prefix/");
  ASSERT_TRUE(m->RecordStep(TestStepRecord(1)).ok());
  ASSERT_TRUE(m->RecordStep(TestStepRecord(2)).ok());
  Status s = m->PushFinal();
  ASSERT_TRUE(s.ok()) << s;
  std::vector<FakeHttpServer::Request> requests = gateway.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "PUT") << "replace the group (prometheus-cpp's PushAdd)";
  EXPECT_EQ(requests[0].target, "/prefix/metrics/job/test-job/rank/3");
  EXPECT_NE(requests[0].headers.find("text/plain; version=0.0.4"), std::string::npos)
      << requests[0].headers;
  EXPECT_EQ(requests[0].body, m->Exposition());
}

TEST(PushFinal, GatewayErrorStatusIsUnavailableWithTheStatus) {
  FakeHttpServer gateway(400);
  auto m = MakePusher(gateway.url());
  Status s = m->PushFinal();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("HTTP 400"), std::string::npos) << s;
  EXPECT_NE(s.message().find("/metrics/job/test-job/rank/3"), std::string::npos) << s;
}

TEST(PushFinal, NothingListeningIsUnavailable) {
  StatusOr<int> port = PickFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  auto m = MakePusher("http://127.0.0.1:" + std::to_string(*port));
  Status s = m->PushFinal();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cannot connect"), std::string::npos) << s;
}

TEST(PushFinal, SlowGatewayTimesOutWithinTheDeadline) {
  FakeHttpServer gateway(200, /*delay_ms=*/1000);
  auto m = MakePusher(gateway.url(), /*timeout_seconds=*/0.3);
  auto start = std::chrono::steady_clock::now();
  Status s = m->PushFinal();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("no answer within 0.3 s"), std::string::npos) << s;
  EXPECT_LT(waited, 1.5);
}

TEST(PushFinal, JobWithASlashIsRefusedUpFront) {
  MetricsOptions o = TestMetricsOptions();
  o.job = "team/job";
  o.pushgateway_url = "http://127.0.0.1:9091";
  Status s = TrainerMetrics::Create(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("metrics.job: must not contain '/'"), std::string::npos) << s;
}

TEST(PushgatewayUrl, SplitsHostFromPortAndPrefix) {
  struct Case {
    std::string url, host, port;
  };
  for (const Case& c : std::vector<Case>{
           {"http://pgw.monitoring:9091", "http://pgw.monitoring", "9091"},
           {"http://pgw:9091/", "http://pgw", "9091"},
           {"https://pgw.example.org", "https://pgw.example.org", "443"},
           {"http://pgw", "http://pgw", "80"},
           {"http://[::1]:9091/gw/prefix/", "http://[::1]", "9091/gw/prefix"},
           {"http://10.0.0.5:9091", "http://10.0.0.5", "9091"},
       }) {
    StatusOr<PushgatewayAddress> a = ParsePushgatewayUrl(c.url);
    ASSERT_TRUE(a.ok()) << c.url << ": " << a.status();
    EXPECT_EQ(a->host, c.host) << c.url;
    EXPECT_EQ(a->port, c.port) << c.url;
  }
}

TEST(PushgatewayUrl, RejectsWhatGatewayCannotUse) {
  for (const auto& [url, why] : std::vector<std::pair<std::string, std::string>>{
           {"pgw:9091", "scheme must be http or https"},
           {"ftp://pgw:9091", "scheme must be http or https"},
           {"http://:9091", "empty host"},
           {"http://pgw:99999", "port must be in 1..65535"},
           {"http://pgw:port", "port must be a number"},
           {"http://pgw:9091/?a=b", "query or fragment not allowed"},
           {"http://user:pw@pgw:9091", "credentials in the URL are not supported"},
           {"http://[::1:9091", "unterminated IPv6 literal"},
       }) {
    Status s = ParsePushgatewayUrl(url).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(s.message().find(why), std::string::npos) << url << ": " << s;
    EXPECT_NE(s.message().find("\"" + url + "\""), std::string::npos) << "names the URL: " << s;
  }
}

TEST(PushgatewayUrl, PathValuesArePercentEncoded) {
  EXPECT_EQ(EncodePushgatewayPathValue("sft-llama.v2_run~1"), "sft-llama.v2_run~1");
  EXPECT_EQ(EncodePushgatewayPathValue("a b%c"), "a%20b%25c");
}

}  // namespace
}  // namespace skrull::metrics
