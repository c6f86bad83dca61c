// A FakeApiServer with an HttpKubeApi talking to it, for the HTTP tests.
#ifndef SKRULL_TESTS_CONTROLLER_KUBE_HTTP_HARNESS_H_
#define SKRULL_TESTS_CONTROLLER_KUBE_HTTP_HARNESS_H_

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "controller/kube/fake_api_server.h"
#include "controller/kube/http_kube_api.h"

namespace skrull::kube::testing {

struct HttpHarness {
  std::unique_ptr<FakeApiServer> server;
  std::unique_ptr<HttpKubeApi> api;
};

// Starts a server with `options` and a client with `config` pointed at it.
inline HttpHarness StartHttpHarness(KubeConfig config = {}, FakeApiServerOptions options = {}) {
  HttpHarness h;
  StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return h;
  h.server = std::move(server).value();
  config.server = h.server->url();
  config.allow_insecure_http = true;  // FakeApiServer speaks plain HTTP
  StatusOr<std::unique_ptr<HttpKubeApi>> api = HttpKubeApi::Create(config);
  EXPECT_TRUE(api.ok()) << api.status();
  if (api.ok()) h.api = std::move(api).value();
  return h;
}

}  // namespace skrull::kube::testing

#endif  // SKRULL_TESTS_CONTROLLER_KUBE_HTTP_HARNESS_H_
