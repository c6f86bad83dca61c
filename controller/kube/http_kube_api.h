// HttpKubeApi: KubeApi over HTTPS to a real API server (or http:// to
// FakeApiServer in tests), on cpprestsdk's http_client (docs/kubernetes-api.md).
//
// What it takes care of:
//  * TLS: the CA from KubeConfig goes in through the SSL-context callback
//    and server certificates are verified (host name included) unless
//    insecure_skip_tls_verify; client certificates the same way;
//  * the bearer token: a token file is re-read when it changes and after a
//    401 (the request is then retried once with the new token);
//  * timeouts: request_timeout for ordinary calls; a watch gets its own
//    client whose timeout is WatchOptions.timeout + watch_timeout_margin, so
//    the server's timeoutSeconds, not cpprestsdk's 30 s default, ends it;
//  * List pages with limit/continue and starts over once when a continue
//    token expires (410), as client-go's pager does; list items get the
//    kind/apiVersion the API server leaves out;
//  * Watch reads the chunked NDJSON body line by line, maps BOOKMARK, and
//    turns ERROR events into errors (code 410 -> IsExpired);
//  * shutdown: CancelWatches / CancelAll close the connections of requests
//    in flight (through cpprestsdk cancellation tokens), so a server that
//    accepts but never answers cannot hold a stopping controller for the
//    request timeout;
//  * plain http:// only with KubeConfig.allow_insecure_http (--insecure-http):
//    it would send the bearer token in clear;
//  * errors: every cpprestsdk exception is caught and becomes kUnavailable
//    naming the call and the server; HTTP errors go through
//    HttpStatusToStatus.
//
// Thread safety: all methods may be called concurrently. Calls block the
// caller's thread on cpprestsdk tasks (`.get()`): never call them from a
// pplx continuation or a cpprestsdk callback (they would wait on the pool
// they block).
#ifndef SKRULL_CONTROLLER_KUBE_HTTP_KUBE_API_H_
#define SKRULL_CONTROLLER_KUBE_HTTP_KUBE_API_H_

#include <memory>
#include <string>

#include "controller/kube/kube_api.h"
#include "controller/kube/kube_config.h"

namespace skrull::kube {

class HttpKubeApi : public KubeApi {
 public:
  // Checks `config` and reads its files once, so that a mistake fails at
  // startup: InvalidArgument for a server that is not an http(s) URL, an
  // http:// one without config.allow_insecure_http, or PEM that does not
  // load (naming the field); NotFound naming a missing CA,
  // client certificate, key or token file. Makes no request.
  static StatusOr<std::unique_ptr<HttpKubeApi>> Create(const KubeConfig& config);

  ~HttpKubeApi() override;
  HttpKubeApi(const HttpKubeApi&) = delete;
  HttpKubeApi& operator=(const HttpKubeApi&) = delete;

  StatusOr<json> Get(const Resource& r, const std::string& ns, const std::string& name) override;
  StatusOr<ListResult> ListProjected(const Resource& r, const std::string& ns,
                                     const std::string& label_selector,
                                     const std::function<json(const json&)>& project) override;
  StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                            const std::string& label_selector) override;
  StatusOr<json> Create(const Resource& r, const std::string& ns, const json& object) override;
  StatusOr<json> Replace(const Resource& r, const std::string& ns, const std::string& name,
                         const json& object, bool status_subresource) override;
  StatusOr<json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                       PatchType type, const json& patch, bool status_subresource) override;
  Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                Propagation propagation) override;
  Status Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
               const std::function<bool(const WatchEvent&)>& on_event) override;

  const KubeConfig& config() const;

  // Shutdown in two steps, neither undone. CancelWatches ends every watch in
  // flight and makes later ones return at once; CancelAll does the same to
  // every call. A cancelled call returns Unavailable whose message says
  // "cancelled: the controller is shutting down". Thread-safe; may be called
  // while other threads are blocked in calls.
  void CancelWatches();
  void CancelAll();

 private:
  struct Impl;
  explicit HttpKubeApi(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_HTTP_KUBE_API_H_
