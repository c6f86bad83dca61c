// status.progress read from a trainer's /metrics page when the controller has
// no Prometheus (controller/tuner/exposition_progress.h).
#include "controller/tuner/exposition_progress.h"

#include <gtest/gtest.h>

#include <string>

#include "common/http_server.h"

namespace skrull::tuner {
namespace {

using nlohmann::json;

// A page as prometheus-cpp writes it: HELP/TYPE lines, label sets (one with
// '}' and a space inside a quoted value), two ranks, a histogram.
const char kPage[] =
    "# HELP skrull_train_step Steps done\n"
    "# TYPE skrull_train_step gauge\n"
    "skrull_train_step{job=\"j\",rank=\"0\"} 40\n"
    "skrull_train_step{job=\"j\",rank=\"1\"} 39\n"
    "skrull_train_loss{job=\"j\",note=\"a } b\"} 2.345678\n"
    "skrull_eval_loss{job=\"j\"} 2.5\n"
    "skrull_tokens_per_second{job=\"j\"} 1234.5\n"
    "skrull_mfu_ratio{job=\"j\"} 0.41234\n"
    "skrull_train_steps_total{job=\"j\"} 40\n"
    "skrull_step_duration_seconds_bucket{job=\"j\",le=\"+Inf\"} 40\n"
    "skrull_step_duration_seconds_sum{job=\"j\"} 20\n"
    "skrull_step_duration_seconds_count{job=\"j\"} 40\n"
    "skrull_train_loss_broken{job=\"j\" 1\n";

api::JobSpec Job(int64_t steps) {
  api::JobSpec spec;
  spec.name = "j";
  spec.training.steps = steps;
  return spec;
}

TEST(ExpositionProgress, ReadsTheTrainersGaugesAndTheEtaFromTheStepHistogram) {
  StatusOr<json> p = ProgressFromExposition(kPage, Job(100));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, json({{"totalSteps", 100},
                      {"step", 40},
                      {"loss", 2.3457},
                      {"evalLoss", 2.5},
                      {"tokensPerSecond", 1234.5},
                      {"mfu", 0.4123},
                      {"etaSeconds", 30.0}}));  // 60 steps left x 0.5 s
}

TEST(ExpositionProgress, AnEpochsJobHasNoTotalStepsNorEta) {
  StatusOr<json> p = ProgressFromExposition(kPage, Job(0));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->contains("totalSteps"));
  EXPECT_FALSE(p->contains("etaSeconds"));
  EXPECT_EQ((*p)["step"], 40);
}

TEST(ExpositionProgress, APageWithoutTheGaugesGivesOnlyWhatTheSpecKnows) {
  StatusOr<json> p = ProgressFromExposition("# nothing yet\n\ngarbage line\n", Job(10));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, json({{"totalSteps", 10}}));
}

TEST(ExpositionProgress, RefusesAPageOverTheBound) {
  const std::string huge(kMaxExpositionBytes + 1, '#');
  StatusOr<json> p = ProgressFromExposition(huge, Job(10));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("at most"), std::string::npos);
}

TEST(TrainerEndpointProgress, FetchesTheRankZeroPageOverHttp) {
  http::HttpServerOptions o;
  auto server =
      http::HttpServer::Start(o, [](const http::HttpRequest& req, http::HttpResponseWriter& w) {
        if (req.path == "/metrics") {
          w.Send(200, "text/plain; version=0.0.4", kPage);
        } else {
          w.Send(404, "text/plain", "no\n");
        }
      });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  ProgressSource source = TrainerEndpointProgress(
      [port](const api::JobSpec&) {
        return "http://127.0.0.1:" + std::to_string(port) + "/metrics";
      },
      std::chrono::seconds(5));
  StatusOr<json> p = source(Job(100));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)["step"], 40);
  EXPECT_EQ((*p)["evalLoss"], 2.5);

  ProgressSource missing = TrainerEndpointProgress(
      [port](const api::JobSpec&) { return "http://127.0.0.1:" + std::to_string(port) + "/nope"; },
      std::chrono::seconds(5));
  StatusOr<json> gone = missing(Job(100));
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gone.status().message().find("/nope: HTTP 404"), std::string::npos)
      << gone.status().message();
}

}  // namespace
}  // namespace skrull::tuner
