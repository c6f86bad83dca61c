// The Prometheus source with an in-memory API answering in the HTTP API's
// JSON (the shapes /api/v1/query returns; prometheus_source_live_test checks
// them against a real server), and the HTTP client's error paths.
#include "controller/tuner/prometheus_source.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skrull::tuner {
namespace {

using nlohmann::json;

constexpr char kMemory[] = "skrull_memory_peak_bytes{job=\"sft\"}[1h]";
constexpr char kTokens[] = "skrull_rank_tokens_peak{job=\"sft\"}[1h]";
constexpr char kCapacity[] = "max_over_time(skrull_memory_capacity_bytes{job=\"sft\"}[1h])";
constexpr char kBucket[] = "last_over_time(skrull_bucket_size_tokens{job=\"sft\"}[1h])";

json Labels(const char* name, int rank, const char* node = "node-a") {
  json m = {{"job", "sft"},
            {"rank", std::to_string(rank)},
            {"dp_rank", "0"},
            {"cp_rank", std::to_string(rank)},
            {"node", node}};
  if (name != nullptr) m["__name__"] = name;
  return m;
}

// A matrix answer: one series per rank with (timestamp, value) samples.
json Matrix(const char* name,
            const std::map<int, std::vector<std::pair<double, double>>>& by_rank) {
  json result = json::array();
  for (const auto& [rank, samples] : by_rank) {
    json values = json::array();
    for (const auto& [ts, v] : samples) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", v);
      values.push_back({ts, buf});
    }
    result.push_back({{"metric", Labels(name, rank)}, {"values", values}});
  }
  return {{"resultType", "matrix"}, {"result", result}};
}

json Vector(const std::map<int, double>& by_rank) {
  json result = json::array();
  for (const auto& [rank, v] : by_rank) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    result.push_back({{"metric", Labels(nullptr, rank)}, {"value", {1700000100.0, buf}}});
  }
  return {{"resultType", "vector"}, {"result", result}};
}

PrometheusSourceOptions Options() {
  PrometheusSourceOptions o;
  o.job = "sft";
  return o;
}

constexpr double kGiB = 1 << 30;

// Two ranks on one node; memory = 1 GiB + 1 MiB x tokens.
FakePrometheusApi TwoRankJob() {
  FakePrometheusApi api;
  auto mem = [](double t) { return kGiB + t * (1 << 20); };
  api.SetData(
      kMemory,
      Matrix(
          "skrull_memory_peak_bytes",
          {{0, {{1700000000.0, mem(1000)}, {1700000000.5, mem(2000)}, {1700000001.0, mem(3000)}}},
           {1, {{1700000000.001, mem(1500)}, {1700000000.501, mem(2500)}}}}));
  api.SetData(kTokens, Matrix("skrull_rank_tokens_peak",
                              {{0, {{1700000000.0, 1000}, {1700000000.5, 2000}}},
                               {1, {{1700000000.001, 1500}, {1700000000.501, 2500}}}}));
  api.SetData(kCapacity, Vector({{0, 64 * kGiB}, {1, 64 * kGiB}}));
  api.SetData(kBucket, Vector({{0, 4096}, {1, 4096}}));
  return api;
}

TEST(PrometheusSource, SendsTheDocumentedQueries) {
  EXPECT_EQ(PrometheusSourceQueries(Options()),
            (std::vector<std::string>{kMemory, kTokens, kCapacity, kBucket}));
  PrometheusSourceOptions o = Options();
  o.job = "a\"b";
  o.window = "30m";
  EXPECT_EQ(PrometheusSourceQueries(o)[0], "skrull_memory_peak_bytes{job=\"a\\\"b\"}[30m]");
}

TEST(PrometheusSource, PairsMemoryAndTokensByScrapeAndSplitsSharedHostMemory) {
  FakePrometheusApi api = TwoRankJob();
  PrometheusSourceOptions o = Options();
  o.host_memory_shared = true;
  StatusOr<TuningInput> in = ReadPrometheus(&api, o);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(api.queries(), PrometheusSourceQueries(o));
  EXPECT_EQ(in->source, "fake-prometheus job=\"sft\"");
  EXPECT_EQ(in->bucket_size_tokens, 4096);
  ASSERT_EQ(in->ranks.size(), 2u);
  // Rank 0's third memory sample has no tokens sample at its timestamp: dropped.
  const uint64_t mib = 1 << 20;
  EXPECT_EQ(in->ranks[0].steps,
            (std::vector<MemoryPoint>{{1000, (1024 + 1000) * mib}, {2000, (1024 + 2000) * mib}}));
  EXPECT_EQ(in->ranks[0].capacity_bytes, static_cast<uint64_t>(32 * kGiB));
  EXPECT_EQ(in->ranks[0].capacity_note, "host memory 64.0 GiB shared by 2 ranks on node node-a");

  // Without sharing (a GPU job) the capacity stands; the tuner fits the line.
  in = ReadPrometheus(&api, Options());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->ranks[0].capacity_bytes, static_cast<uint64_t>(64 * kGiB));
  StatusOr<TuningDecision> d = Tune(*in, api::TuningSpec{true, 0.5, 1024, 1 << 20});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->method, FitMethod::kLeastSquares);
  EXPECT_NEAR(d->bytes_per_token, 1 << 20, 1e-6);
  EXPECT_NEAR(d->static_bytes, kGiB, 1e-3);
}

TEST(PrometheusSource, NoSeriesForTheJobIsNotFoundAndPointsAtHonorLabels) {
  FakePrometheusApi api;
  StatusOr<TuningInput> in = ReadPrometheus(&api, Options());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(in.status().message(),
            "fake-prometheus: no skrull_memory_peak_bytes series with job=\"sft\" in the 1h "
            "before the evaluation time; is Prometheus scraping the ranks with honor_labels: "
            "true (else the label is exported_job), and did the run record a step in that "
            "window?");
}

TEST(PrometheusSource, ASeriesWithoutARankLabelIsRefused) {
  FakePrometheusApi api = TwoRankJob();
  json data = Matrix("skrull_memory_peak_bytes", {{0, {{1.0, 2.0}}}});
  data["result"][0]["metric"].erase("rank");
  api.SetData(kMemory, data);
  StatusOr<TuningInput> in = ReadPrometheus(&api, Options());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(in.status().message().find("has no \"rank\" label; scrape the ranks with "
                                       "honor_labels: true"),
            std::string::npos)
      << in.status();
}

TEST(PrometheusSource, AWrongResultTypeNamesTheQuery) {
  FakePrometheusApi api = TwoRankJob();
  api.SetData(kMemory, Vector({{0, 1}}));
  StatusOr<TuningInput> in = ReadPrometheus(&api, Options());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().message(),
            std::string("query `") + kMemory + "`: expected a matrix result (got \"vector\")");
}

TEST(PrometheusSource, AQueryErrorCarriesTheQuery) {
  FakePrometheusApi api = TwoRankJob();
  api.SetError(kBucket, UnavailableError("GET x: connection refused"));
  StatusOr<TuningInput> in = ReadPrometheus(&api, Options());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(in.status().message(),
            std::string("query `") + kBucket + "`: GET x: connection refused");
}

TEST(PrometheusSource, DiedOfMemoryComesFromTheCaller) {
  FakePrometheusApi api = TwoRankJob();
  PrometheusSourceOptions o = Options();
  o.died_of_memory = true;
  o.failure = "pod sft-0: OOMKilled";
  StatusOr<TuningInput> in = ReadPrometheus(&api, o);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->died_of_memory);
  EXPECT_EQ(in->failure, "pod sft-0: OOMKilled");
}

TEST(ParseQueryResponse, ReturnsTheDataObjectOfASuccess) {
  StatusOr<json> d = ParseQueryResponse(
      200,
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"rank":"0"},"value":[1700000000.123,"42"]}]}})",
      "GET p");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)["result"][0]["value"][1], "42");
}

TEST(ParseQueryResponse, MapsTheApisErrorsToStatusCodes) {
  StatusOr<json> d = ParseQueryResponse(
      400,
      R"({"status":"error","errorType":"bad_data","error":"1:14: parse error: unexpected \"}\""})",
      "GET http://p/api/v1/query");
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(),
            "GET http://p/api/v1/query: HTTP 400: bad_data: 1:14: parse error: unexpected \"}\"");
  d = ParseQueryResponse(
      503, R"({"status":"error","errorType":"timeout","error":"query timed out"})", "GET p");
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.status().message(), "GET p: HTTP 503: timeout: query timed out");
  d = ParseQueryResponse(404, "404 page not found\n", "GET p");
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("is the URL a Prometheus server, with its path prefix?"),
            std::string::npos);
  d = ParseQueryResponse(502, "<html>Bad Gateway</html>", "GET p");
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
}

TEST(HttpPrometheusApi, RefusesWhatIsNotAnHttpUrl) {
  for (const char* bad : {"prometheus:9090", "ftp://p:9090", "http://", "http://p:9090/?x=1"}) {
    auto api = HttpPrometheusApi::Create(bad, std::chrono::seconds(1), "--prometheus");
    ASSERT_FALSE(api.ok()) << bad;
    EXPECT_EQ(api.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(api.status().message().rfind("--prometheus: ", 0), 0u) << api.status();
    EXPECT_NE(api.status().message().find(std::string("(got '") + bad + "')"), std::string::npos);
  }
  auto ok = HttpPrometheusApi::Create("http://prometheus.monitoring:9090/prom/");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)->Describe(), "http://prometheus.monitoring:9090/prom");
}

TEST(HttpPrometheusApi, ANonListeningPortIsUnavailable) {
  // Bind a loopback port and close it again: nothing listens there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  auto api = HttpPrometheusApi::Create("http://127.0.0.1:" + std::to_string(port),
                                       std::chrono::seconds(5));
  ASSERT_TRUE(api.ok()) << api.status();
  StatusOr<json> d = (*api)->Query("up", 0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.status().message().rfind(
                "GET http://127.0.0.1:" + std::to_string(port) + "/api/v1/query: ", 0),
            0u)
      << d.status();
}

}  // namespace
}  // namespace skrull::tuner
