// FakeApiServer: a Kubernetes API server on loopback for end-to-end tests
// of HttpKubeApi and of the controller (docs/kubernetes-api.md, "Testing"). Test support only
// (library skrull_kube_testing).
//
// It serves the REST paths of the registered resources (pods, services,
// configmaps, events, leases, skrulljobs by default; AddResource for more)
// from a MemoryKubeApi it owns, so it has that class's semantics
// (resourceVersions, 409/410, /status, GC, bookmarks):
//   GET    .../<plural>[?labelSelector=&limit=&continue=]   list
//   GET    .../<plural>?watch=1&resourceVersion=&timeoutSeconds=
//          &allowWatchBookmarks=&labelSelector=              chunked NDJSON
//   GET    .../<plural>/<name>                               get
//   POST   .../<plural>                                      create (201)
//   PUT    .../<plural>/<name>[/status]                      replace
//   PATCH  .../<plural>/<name>[/status]   Content-Type application/
//          merge-patch+json or json-patch+json (else 415)
//   DELETE .../<plural>/<name>[?propagationPolicy=]          or a
//          DeleteOptions body with propagationPolicy
// with the namespace in the path (/namespaces/<ns>/), or none for
// all-namespace lists and watches. Errors are Kubernetes Status bodies with
// the matching code; a watch that fails after it started (410 expired,
// injected errors) ends with an ERROR event, as the API server does.
// A request without the expected bearer token is 401.
//
// Fault injection: FailNextRequests (HTTP errors before routing, e.g. a 410
// on a watch request or 500s), DropWatches (cut every open watch stream
// without its final chunk), memory().FailNext (errors from the store,
// which watches report in-stream), memory().CompactHistory (410 on resume).
// The test acts as the kubelet through memory() (see fake_kubelet.h).
//
// Thread safety: every method is thread-safe. The destructor ends open
// watches and waits for the serving threads.
#ifndef SKRULL_CONTROLLER_KUBE_FAKE_API_SERVER_H_
#define SKRULL_CONTROLLER_KUBE_FAKE_API_SERVER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/http_server.h"
#include "controller/kube/memory_kube_api.h"

namespace skrull::kube {

struct FakeApiServerOptions {
  MemoryKubeApiOptions memory;
  // The token requests must carry ("Authorization: Bearer <token>"); "" =
  // no check. SetToken changes it (token rotation).
  std::string token;
  // Serving threads: each open watch holds one, so keep this above the
  // number of concurrent watches plus requests.
  int threads = 16;
  // TLS (tls_server.h): PEM text; empty = plain http. With client_ca_pem
  // set, clients must present a certificate it signed.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string tls_client_ca_pem;
};

class FakeApiServer {
 public:
  // Listens on 127.0.0.1:<ephemeral>. Unavailable if it cannot;
  // InvalidArgument for TLS PEM that does not load.
  static StatusOr<std::unique_ptr<FakeApiServer>> Start(FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // "http://127.0.0.1:PORT" (https:// with TLS): KubeConfig::server.
  std::string url() const;
  int port() const { return server_->port(); }

  // The store behind the server: seed objects, act as the kubelet, inject
  // store-level faults.
  MemoryKubeApi& memory() { return memory_; }

  // Serves resource `r` too (kind and apiVersion are filled on create).
  void AddResource(const Resource& r);
  // The bearer token to accept from now on ("" = any).
  void SetToken(const std::string& token);
  // The next `count` requests with HTTP method `method` ("GET", ...;
  // "WATCH" for watch requests only) answer `http_code` with a Status body
  // before they reach the store.
  void FailNextRequests(const std::string& method, int count, int http_code);
  // Cuts every open watch stream (no final chunk): the client sees the
  // connection break. Returns how many were open.
  int DropWatches() { return memory_.DropWatches(); }

  // "GET /api/v1/namespaces/ns/pods?limit=500", ... in arrival order.
  std::vector<std::string> requests() const;

 private:
  explicit FakeApiServer(FakeApiServerOptions options);
  void Handle(const http::HttpRequest& req, http::HttpResponseWriter& w);
  void ServeWatch(const Resource& r, const std::string& ns, const std::string& query,
                  http::HttpResponseWriter& w);
  bool FindResource(const std::string& prefix, const std::string& plural, Resource* out) const;
  int TakeInjected(const std::string& method);

  FakeApiServerOptions options_;
  MemoryKubeApi memory_;
  bool tls_ = false;
  mutable std::mutex mu_;
  std::vector<Resource> resources_;  // guarded by mu_
  std::string token_;                // guarded by mu_
  struct Injected {
    std::string method;
    int count;
    int http_code;
  };
  std::vector<Injected> injected_;     // guarded by mu_
  std::vector<std::string> requests_;  // guarded by mu_
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_FAKE_API_SERVER_H_
