// End to end: the real `skrull-controller serve` binary, as a separate
// process, against FakeApiServer over HTTP with a kubeconfig and a bearer
// token, with leader election on. The test plays the user (creates a
// SkrullJob) and the kubelet (moves pods through their phases).
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "controller/kube/fake_api_server.h"
#include "controller/kube/fake_kubelet.h"
#include "tests/trainer/prometheus_harness.h"

namespace skrull::controller {
namespace {

namespace fs = std::filesystem;
using kube::json;

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ServeEndToEnd, TheControllerBinaryRunsAJobThroughTheApiServer) {
  const char* bin_dir = std::getenv("SKRULL_BIN_DIR");
  ASSERT_NE(bin_dir, nullptr) << "SKRULL_BIN_DIR is set by CTest";
  kube::FakeApiServerOptions so;
  so.token = "secret-token";
  StatusOr<std::unique_ptr<kube::FakeApiServer>> server = kube::FakeApiServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status();
  kube::MemoryKubeApi& api = (*server)->memory();

  const fs::path dir = fs::temp_directory_path() / ("skrull_serve_e2e_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "kubeconfig")
      << "apiVersion: v1\nkind: Config\n"
      << "clusters:\n- name: fake\n  cluster:\n    server: " << (*server)->url() << "\n"
      << "users:\n- name: ctl\n  user:\n    token: secret-token\n"
      << "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
      << "    user: ctl\n    namespace: team\n"
      << "current-context: fake\n";
  StatusOr<int> port = testing::PickFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  setenv("POD_NAMESPACE", "skrull-system", 1);
  setenv("POD_NAME", "controller-0", 1);
  StatusOr<pid_t> pid =
      testing::SpawnProcess({std::string(bin_dir) + "/skrull-controller", "serve", "--kubeconfig",
                             (dir / "kubeconfig").string(), "--metrics-port", std::to_string(*port),
                             "--metrics-address", "127.0.0.1", "--leader-elect", "--resync-seconds",
                             "1", "--trainer-image", "registry.local/skrull/trainer:test"},
                            "", (dir / "controller.log").string());
  ASSERT_TRUE(pid.ok()) << pid.status();

  const json job = json::parse(R"({
    "apiVersion": "skrull.io/v1alpha1", "kind": "SkrullJob",
    "metadata": {"name": "sft", "namespace": "team"},
    "spec": {
      "model": {"config": "/data/tiny/config.json"},
      "data": {"path": "/data/train.jsonl"},
      "parallelism": {"nodes": 2, "procsPerNode": 2, "dataParallel": 2, "contextParallel": 2},
      "scheduler": {"bucketSize": "4K"},
      "resources": {"gpusPerProc": 0}
    }})");
  ASSERT_TRUE(api.Create(kube::SkrullJobsResource(), "team", job).ok());
  auto pods = [&] { return api.List(kube::PodsResource(), "team", "").value().items; };
  ASSERT_TRUE(WaitFor([&] { return pods().size() == 2; })) << ReadFile(dir / "controller.log");
  const json pod0 = *api.Get(kube::PodsResource(), "team", "sft-node-0-0");
  EXPECT_EQ(pod0["spec"]["containers"][0]["image"], "registry.local/skrull/trainer:test");

  for (const char* phase : {"Running", "Succeeded"}) {
    for (const char* name : {"sft-node-0-0", "sft-node-1-0"}) {
      ASSERT_TRUE(kube::SetPodPhase(api, "team", name, phase).ok());
    }
  }
  auto phase = [&] {
    return api.Get(kube::SkrullJobsResource(), "team", "sft")
        .value()
        .value("status", json::object())
        .value("phase", "");
  };
  EXPECT_TRUE(WaitFor([&] { return phase() == "Succeeded"; })) << phase() << "\n"
                                                               << ReadFile(dir / "controller.log");

  const StatusOr<json> lease =
      api.Get(kube::LeasesResource(), "skrull-system", "skrull-controller");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "controller-0");

  StatusOr<testing::HttpResponse> metrics = testing::HttpGet("127.0.0.1", *port, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("skrull_controller_is_leader 1"), std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("skrull_controller_jobs{phase=\"Succeeded\"} 1"), std::string::npos);
  StatusOr<testing::HttpResponse> health = testing::HttpGet("127.0.0.1", *port, "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);

  // SIGTERM: the controller stops, releases the lease and exits 0.
  ASSERT_EQ(kill(*pid, SIGTERM), 0);
  int wstatus = 0;
  ASSERT_TRUE(
      WaitFor([&] { return waitpid(*pid, &wstatus, WNOHANG) == *pid; }, std::chrono::seconds(45)))
      << ReadFile(dir / "controller.log");
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << ReadFile(dir / "controller.log");
  EXPECT_EQ(api.Get(kube::LeasesResource(), "skrull-system", "skrull-controller")
                .value()["spec"]["holderIdentity"],
            "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace skrull::controller
