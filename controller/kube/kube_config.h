// KubeConfig: where the API server is and how to authenticate, for
// HttpKubeApi; loaded from the pod's service account (in cluster) or from
// a kubeconfig file (out of cluster). See docs/kubernetes-api.md.
//
// Environment variables are read only in main: main fills InClusterEnv from
// the kServiceHostEnv / kServicePortEnv variables and passes it in.
//
// Thread safety: plain values and pure functions (they read files).
#ifndef SKRULL_CONTROLLER_KUBE_KUBE_CONFIG_H_
#define SKRULL_CONTROLLER_KUBE_KUBE_CONFIG_H_

#include <chrono>
#include <string>

#include "common/status.h"

namespace skrull::kube {

// The variables the kubelet sets in every pod.
inline constexpr char kServiceHostEnv[] = "KUBERNETES_SERVICE_HOST";
inline constexpr char kServicePortEnv[] = "KUBERNETES_SERVICE_PORT";
// Where the service account's token, ca.crt and namespace are mounted.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct KubeConfig {
  // "https://10.96.0.1:443" (a path prefix is kept: "https://host/k8s/c1");
  // http:// only with allow_insecure_http (tests against FakeApiServer).
  std::string server;
  // Accept an http:// server, which sends the bearer token in clear
  // (`skrull-controller serve --insecure-http`). Set by the caller, never
  // read from a kubeconfig.
  bool allow_insecure_http = false;

  // Server verification: PEM CA bundle, as text (wins) or a file read when
  // HttpKubeApi is created. Neither = the system roots.
  std::string certificate_authority_data;
  std::string certificate_authority_file;
  bool insecure_skip_tls_verify = false;  // no server verification at all

  // Client certificate authentication (PEM), text or files; both or neither.
  std::string client_certificate_data;
  std::string client_certificate_file;
  std::string client_key_data;
  std::string client_key_file;

  // Bearer token authentication. A file wins over the literal: it is
  // re-read whenever its mtime/size/inode change (checked on every request)
  // and after a 401, because projected service-account tokens rotate.
  std::string bearer_token;
  std::string bearer_token_file;

  // The namespace of the kubeconfig context or of the service account
  // ("default" when neither names one).
  std::string default_namespace = "default";

  // Each non-watch request: connect plus any quiet period while reading
  // (cpprestsdk's timer restarts on every read).
  std::chrono::seconds request_timeout{30};
  // A watch's client-side timeout is WatchOptions.timeout plus this, so that
  // the server, not the client, ends a quiet watch (cpprestsdk's default of
  // 30 s would cut a 5-minute watch).
  std::chrono::seconds watch_timeout_margin{30};
  // List pages (limit=); List fetches all pages.
  int list_page_size = 500;
  std::string user_agent = "skrull-controller";

  // Where this came from, for messages: "in-cluster service account",
  // "kubeconfig /home/u/.kube/config, context kind-dev".
  std::string source;
};

// The environment of a pod, as main read it.
struct InClusterEnv {
  std::string service_host;  // $KUBERNETES_SERVICE_HOST, e.g. "10.96.0.1" or "fd00::1"
  std::string service_port;  // $KUBERNETES_SERVICE_PORT, e.g. "443"
  std::string service_account_dir = kServiceAccountDir;
};

// https://<host>:<port> (an IPv6 host in brackets), the CA file
// <dir>/ca.crt, the token file <dir>/token (re-read as it rotates), the
// namespace from <dir>/namespace. FailedPrecondition when host or port is
// empty (not in a pod: use a kubeconfig); NotFound naming the file when the
// token or ca.crt is missing; InvalidArgument for a bad port.
StatusOr<KubeConfig> InClusterConfig(const InClusterEnv& env);

// Reads a kubeconfig (YAML): the context `context` ("" = current-context),
// its cluster (server, certificate-authority[-data], insecure-skip-tls-
// verify), its user (token, tokenFile, client-certificate[-data],
// client-key[-data]) and namespace. Relative file paths are relative to the
// kubeconfig's folder. Errors name the file and the field, e.g.
// `kubeconfig /k: users[name=dev].user.exec: exec credential plugins are
// not supported; ...`: NotFound for a missing file, InvalidArgument for bad
// YAML or fields, FailedPrecondition for a missing context or an
// unsupported authentication method (exec, auth-provider, basic auth).
StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_KUBE_CONFIG_H_
