// HttpKubeApi over TLS against FakeApiServer: CA verification (host name
// included), insecure mode, client certificates. Certificates come from
// the openssl CLI, made fresh in a temp dir; the tests skip without it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/file_util.h"
#include "controller/kube/fake_api_server.h"
#include "controller/kube/http_kube_api.h"
#include "tests/controller/kube/kube_test_util.h"

namespace skrull::kube {
namespace {

using testing::PodObject;

struct Pem {
  std::string cert;
  std::string key;
};

// A self-signed P-256 certificate for `subject_alt_name` (e.g. "IP:127.0.0.1").
Pem SelfSigned(const std::string& dir, const std::string& name, const std::string& san) {
  const std::string cert = dir + "/" + name + ".crt";
  const std::string key = dir + "/" + name + ".key";
  const std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-subj /CN=" +
      name + " -addext subjectAltName=" + san + " -keyout " + key + " -out " + cert +
      " >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return Pem{ReadFileToString(cert).value(), ReadFileToString(key).value()};
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "openssl is not on PATH (Debian package openssl)";
    }
    dir_ = testing::TempDir();
    server_pem_ = SelfSigned(dir_, "server", "IP:127.0.0.1");
  }

  std::unique_ptr<FakeApiServer> StartServer(const std::string& client_ca = "") {
    FakeApiServerOptions o;
    o.tls_cert_pem = server_pem_.cert;
    o.tls_key_pem = server_pem_.key;
    o.tls_client_ca_pem = client_ca;
    StatusOr<std::unique_ptr<FakeApiServer>> s = FakeApiServer::Start(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return std::move(s).value();
  }

  static std::unique_ptr<HttpKubeApi> Client(const KubeConfig& config) {
    StatusOr<std::unique_ptr<HttpKubeApi>> api = HttpKubeApi::Create(config);
    EXPECT_TRUE(api.ok()) << api.status();
    return std::move(api).value();
  }

  std::string dir_;
  Pem server_pem_;
};

TEST_F(Tls, TrustedCaServesEveryVerbAndWatch) {
  auto server = StartServer();
  ASSERT_EQ(server->url().rfind("https://", 0), 0u);
  KubeConfig config;
  config.server = server->url();
  config.certificate_authority_data = server_pem_.cert;
  auto api = Client(config);
  ASSERT_TRUE(api->Create(PodsResource(), "ns", PodObject("p")).ok());
  StatusOr<json> got = api->Get(PodsResource(), "ns", "p");
  ASSERT_TRUE(got.ok()) << got.status();
  WatchOptions o;
  std::vector<WatchEvent> events;
  Status s = api->Watch(PodsResource(), "ns", o, [&](const WatchEvent& e) {
    events.push_back(e);
    return false;
  });
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].object["metadata"]["name"], "p");
}

TEST_F(Tls, CaFileWorksLikeCaData) {
  auto server = StartServer();
  KubeConfig config;
  config.server = server->url();
  config.certificate_authority_file = dir_ + "/server.crt";
  EXPECT_TRUE(Client(config)->List(PodsResource(), "ns", "").ok());
}

TEST_F(Tls, UnknownCaIsRefused) {
  auto server = StartServer();
  KubeConfig config;
  config.server = server->url();
  config.certificate_authority_data = SelfSigned(dir_, "other", "IP:127.0.0.1").cert;
  StatusOr<json> got = Client(config)->Get(PodsResource(), "ns", "p");
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status();
  EXPECT_NE(got.status().message().find("Error in SSL handshake (certificate verify failed"),
            std::string::npos)
      << got.status();
}

TEST_F(Tls, HostNameMustMatchTheCertificate) {
  auto server = StartServer();
  KubeConfig config;
  config.server = "https://localhost:" + std::to_string(server->port());  // cert is for 127.0.0.1
  config.certificate_authority_data = server_pem_.cert;
  StatusOr<json> got = Client(config)->Get(PodsResource(), "ns", "p");
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status();
  EXPECT_NE(got.status().message().find("SSL handshake"), std::string::npos) << got.status();
}

TEST_F(Tls, InsecureSkipsVerification) {
  auto server = StartServer();
  KubeConfig config;
  config.server = server->url();
  config.insecure_skip_tls_verify = true;
  EXPECT_TRUE(Client(config)->List(PodsResource(), "ns", "").ok());
}

TEST_F(Tls, ClientCertificateIsSentWhenTheServerAsks) {
  const Pem client = SelfSigned(dir_, "skrull-controller", "DNS:skrull-controller");
  auto server = StartServer(/*client_ca=*/client.cert);
  KubeConfig config;
  config.server = server->url();
  config.certificate_authority_data = server_pem_.cert;
  StatusOr<ListResult> without = Client(config)->List(PodsResource(), "ns", "");
  EXPECT_EQ(without.status().code(), StatusCode::kUnavailable) << "no certificate, no handshake";
  config.client_certificate_data = client.cert;
  config.client_key_file = dir_ + "/skrull-controller.key";
  StatusOr<ListResult> with = Client(config)->List(PodsResource(), "ns", "");
  EXPECT_TRUE(with.ok()) << with.status();
}

TEST_F(Tls, MismatchedClientKeyFailsAtCreate) {
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.client_certificate_data = server_pem_.cert;
  config.client_key_data = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n";
  StatusOr<std::unique_ptr<HttpKubeApi>> api = HttpKubeApi::Create(config);
  EXPECT_EQ(api.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(api.status().message().find("client key"), std::string::npos) << api.status();
  config.client_key_data = SelfSigned(dir_, "another", "DNS:another").key;
  api = HttpKubeApi::Create(config);
  EXPECT_EQ(api.status().code(), StatusCode::kInvalidArgument);
  // OpenSSL 3.0 (Debian 12) and 3.5 (Debian 13) word the reason differently.
  EXPECT_NE(api.status().message().find("client key: not usable PEM (use_private_key: key values "
                                        "mismatch"),
            std::string::npos)
      << api.status();
}

}  // namespace
}  // namespace skrull::kube
