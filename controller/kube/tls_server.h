// TLS for HttpServer connections (OpenSSL), so FakeApiServer can serve
// https:// and tests exercise HttpKubeApi's CA and client-certificate
// handling. Test support only (library skrull_kube_testing).
#ifndef SKRULL_CONTROLLER_KUBE_TLS_SERVER_H_
#define SKRULL_CONTROLLER_KUBE_TLS_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "common/http_server.h"
#include "common/status.h"

namespace skrull::kube {

using ConnectionWrapper =
    std::function<std::unique_ptr<http::HttpConnection>(int fd, http::Deadline deadline)>;

// An HttpServerOptions::wrap_connection that runs the TLS handshake as a
// server with `cert_pem` / `key_pem` (PEM text). With `client_ca_pem`, a
// client must present a certificate signed by it (else the handshake
// fails and the connection is dropped). InvalidArgument when the PEM does
// not load. The wrapper is thread-safe.
StatusOr<ConnectionWrapper> MakeTlsWrapper(const std::string& cert_pem, const std::string& key_pem,
                                           const std::string& client_ca_pem = "");

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_TLS_SERVER_H_
