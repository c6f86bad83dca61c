#include "controller/kube/tls_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>

namespace skrull::kube {

namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// Waits for what the last SSL call asked for; false on other errors.
bool WaitForSsl(SSL* ssl, int rc, int fd, http::Deadline deadline) {
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
      return http::WaitForFd(fd, POLLIN, deadline);
    case SSL_ERROR_WANT_WRITE:
      return http::WaitForFd(fd, POLLOUT, deadline);
    default:
      ERR_clear_error();
      return false;
  }
}

class TlsConnection : public http::HttpConnection {
 public:
  TlsConnection(SSL* ssl, int fd) : ssl_(ssl), fd_(fd) {}
  ~TlsConnection() override {
    SSL_shutdown(ssl_);  // best effort close_notify; the socket is non-blocking
    SSL_free(ssl_);
  }

  long Read(char* buf, size_t size, http::Deadline deadline) override {
    while (true) {
      const int n = SSL_read(ssl_, buf, static_cast<int>(size));
      if (n > 0) return n;
      if (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) return 0;
      if (!WaitForSsl(ssl_, n, fd_, deadline)) return -1;
    }
  }

  bool Write(const std::string& data, http::Deadline deadline) override {
    size_t sent = 0;
    while (sent < data.size()) {
      const int n = SSL_write(ssl_, data.data() + sent, static_cast<int>(data.size() - sent));
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (!WaitForSsl(ssl_, n, fd_, deadline)) {
        return false;
      }
    }
    return true;
  }

 private:
  SSL* ssl_;
  int fd_;
};

}  // namespace

StatusOr<ConnectionWrapper> MakeTlsWrapper(const std::string& cert_pem, const std::string& key_pem,
                                           const std::string& client_ca_pem) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return InternalError("TLS: SSL_CTX_new: " + OpenSslError());
  auto load = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  };
  auto cert_bio = load(cert_pem);
  X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  if (cert == nullptr || SSL_CTX_use_certificate(ctx.get(), cert) != 1) {
    if (cert != nullptr) X509_free(cert);
    return InvalidArgumentError("TLS: the server certificate does not load: " + OpenSslError());
  }
  X509_free(cert);
  auto key_bio = load(key_pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  if (key == nullptr || SSL_CTX_use_PrivateKey(ctx.get(), key) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    if (key != nullptr) EVP_PKEY_free(key);
    return InvalidArgumentError("TLS: the server key does not load or match: " + OpenSslError());
  }
  EVP_PKEY_free(key);
  if (!client_ca_pem.empty()) {
    auto ca_bio = load(client_ca_pem);
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    int added = 0;
    while (X509* ca = PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, ca);
      X509_free(ca);
      ++added;
    }
    ERR_clear_error();  // the loop ends on "no start line"
    if (added == 0) return InvalidArgumentError("TLS: no certificate in the client CA PEM");
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ConnectionWrapper(
      [ctx](int fd, http::Deadline deadline) -> std::unique_ptr<http::HttpConnection> {
        SSL* ssl = SSL_new(ctx.get());
        if (ssl == nullptr) return nullptr;
        SSL_set_fd(ssl, fd);
        while (true) {
          const int rc = SSL_accept(ssl);
          if (rc == 1) break;
          if (!WaitForSsl(ssl, rc, fd, deadline)) {
            SSL_free(ssl);
            return nullptr;
          }
        }
        return std::make_unique<TlsConnection>(ssl, fd);
      });
}

}  // namespace skrull::kube
