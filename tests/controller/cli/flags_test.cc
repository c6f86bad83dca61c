#include "controller/cli/flags.h"

#include <gtest/gtest.h>

namespace skrull::controller::cli {
namespace {

StatusOr<Invocation> Parse(std::vector<std::string> args) { return ParseCommandLine(args); }

TEST(ControllerFlags, ServeTakesEveryFlagWithSpaceOrEquals) {
  StatusOr<Invocation> inv = Parse({"serve",
                                    "--kubeconfig",
                                    "/k",
                                    "--context=dev",
                                    "--namespace",
                                    "team",
                                    "--insecure-http",
                                    "--metrics-port=9090",
                                    "--metrics-address",
                                    "127.0.0.1",
                                    "--leader-elect",
                                    "--lease-namespace",
                                    "sys",
                                    "--lease-name",
                                    "l",
                                    "--trainer-image",
                                    "img:1",
                                    "--trainer-service-account",
                                    "sa",
                                    "--trainer-ipc-lock",
                                    "--trainer-shared-memory",
                                    "--resync-seconds",
                                    "5",
                                    "--workers",
                                    "3",
                                    "--prometheus-url",
                                    "http://p:9090",
                                    "--prometheus-window",
                                    "2h"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->command, Command::kServe);
  const ServeFlags& f = inv->serve;
  EXPECT_EQ(f.kubeconfig, "/k");
  EXPECT_EQ(f.context, "dev");
  EXPECT_EQ(f.watch_namespace, "team");
  EXPECT_TRUE(f.insecure_http);
  EXPECT_EQ(f.metrics_port, 9090);
  EXPECT_EQ(f.metrics_address, "127.0.0.1");
  EXPECT_TRUE(f.leader_elect);
  EXPECT_EQ(f.lease_namespace, "sys");
  EXPECT_EQ(f.lease_name, "l");
  EXPECT_EQ(f.trainer_image, "img:1");
  EXPECT_EQ(f.trainer_service_account, "sa");
  EXPECT_TRUE(f.trainer_pod.ipc_lock);
  EXPECT_TRUE(f.trainer_pod.shared_memory);
  EXPECT_EQ(f.resync_seconds, 5);
  EXPECT_EQ(f.workers, 3);
  EXPECT_EQ(f.prometheus_url, "http://p:9090");
  EXPECT_EQ(f.prometheus_window, "2h");
}

TEST(ControllerFlags, ServeDefaultsAreSafe) {
  StatusOr<Invocation> inv = Parse({"serve"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_FALSE(inv->serve.insecure_http);
  EXPECT_FALSE(inv->serve.trainer_pod.ipc_lock);
  EXPECT_FALSE(inv->serve.trainer_pod.shared_memory);
  EXPECT_EQ(inv->serve.metrics_port, 8080);
  EXPECT_EQ(inv->serve.workers, 2);
}

TEST(ControllerFlags, RunKeepsTrainerArgsVerbatimEvenWithDashes) {
  StatusOr<Invocation> inv = Parse({"run", "job.yaml", "--runs", "3", "--trainer", "/bin/t",
                                    "--trainer-arg", "--log-level=debug", "--trainer-arg=x"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->command, Command::kRun);
  EXPECT_EQ(inv->run.job_file, "job.yaml");
  EXPECT_EQ(inv->run.runs, 3);
  EXPECT_EQ(inv->run.trainer, "/bin/t");
  EXPECT_EQ(inv->run.trainer_args, (std::vector<std::string>{"--log-level=debug", "x"}));
}

TEST(ControllerFlags, RenderAndTuneTakeTheJobFile) {
  StatusOr<Invocation> render =
      Parse({"render", "j.yaml", "--attempt", "2", "--uid", "u", "--trainer-shared-memory"});
  ASSERT_TRUE(render.ok()) << render.status();
  EXPECT_EQ(render->command, Command::kRender);
  EXPECT_EQ(render->render.attempt, 2);
  EXPECT_EQ(render->render.uid, "u");
  EXPECT_TRUE(render->render.trainer_pod.shared_memory);
  StatusOr<Invocation> tune = Parse({"tune", "j.yaml", "--run", "runs/x"});
  ASSERT_TRUE(tune.ok()) << tune.status();
  EXPECT_EQ(tune->tune.run_dir, "runs/x");
}

TEST(ControllerFlags, ErrorsNameTheFlagAndPointAtHelp) {
  const std::pair<std::vector<std::string>, std::string> bad[] = {
      {{"run", "j.yaml", "--runs", "0"}, "--runs"},
      {{"serve", "--metrics-port", "70000"}, "--metrics-port"},
      {{"serve", "--workers", "many"}, "--workers"},
      {{"serve", "--bogus"}, "--bogus"},
      {{"tune", "j.yaml"}, "--run"},
      {{"run"}, "job"},
      {{"launch"}, "unknown command 'launch'"},
      {{}, "no command given"},
  };
  for (const auto& [args, want] : bad) {
    StatusOr<Invocation> inv = Parse(args);
    ASSERT_FALSE(inv.ok()) << want;
    EXPECT_EQ(inv.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(inv.status().message().find(want), std::string::npos) << inv.status();
    if (!args.empty()) {
      EXPECT_NE(inv.status().message().find("--help"), std::string::npos) << inv.status();
    }
  }
}

TEST(ControllerFlags, HelpAnywhereGivesUsage) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"help"}, {"serve", "--help"}, {"run", "-h"}}) {
    StatusOr<Invocation> inv = Parse(args);
    ASSERT_TRUE(inv.ok()) << inv.status();
    EXPECT_EQ(inv->command, Command::kHelp);
    EXPECT_FALSE(inv->help_text.empty());
  }
  EXPECT_NE(Parse({"serve", "--help"})->help_text.find("--insecure-http"), std::string::npos);
}

}  // namespace
}  // namespace skrull::controller::cli
