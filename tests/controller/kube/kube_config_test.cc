#include "controller/kube/kube_config.h"

#include <gtest/gtest.h>

#include "common/file_util.h"
#include "tests/controller/kube/kube_test_util.h"

namespace skrull::kube {
namespace {

std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

// "hello" base64-encoded is aGVsbG8=.
const char kKubeconfig[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443
    certificate-authority: certs/prod-ca.crt
- name: local
  cluster:
    server: https://[::1]:6443
    certificate-authority-data: aGVsbG8=
    insecure-skip-tls-verify: true
users:
- name: dev-user
  user:
    tokenFile: dev.token
- name: cert-user
  user:
    client-certificate-data: aGVsbG8=
    client-key: /abs/key.pem
- name: exec-user
  user:
    exec:
      command: gke-gcloud-auth-plugin
contexts:
- name: dev
  context:
    cluster: local
    user: dev-user
    namespace: team-a
- name: prod
  context:
    cluster: prod
    user: cert-user
- name: gke
  context:
    cluster: prod
    user: exec-user
- name: dangling
  context:
    cluster: nowhere
    user: dev-user
)";

TEST(LoadKubeconfig, ReadsTheCurrentContext) {
  const std::string dir = testing::TempDir();
  const std::string path = Write(dir, "config", kKubeconfig);
  StatusOr<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[::1]:6443");
  EXPECT_EQ(c->certificate_authority_data, "hello");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->bearer_token_file, dir + "/dev.token") << "relative to the kubeconfig";
  EXPECT_EQ(c->default_namespace, "team-a");
  EXPECT_EQ(c->source, "kubeconfig " + path + ", context dev");
}

TEST(LoadKubeconfig, ReadsANamedContextWithClientCertificates) {
  const std::string dir = testing::TempDir();
  StatusOr<KubeConfig> c = LoadKubeconfig(Write(dir, "config", kKubeconfig), "prod");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://prod.example:6443");
  EXPECT_EQ(c->certificate_authority_file, dir + "/certs/prod-ca.crt");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->client_certificate_data, "hello");
  EXPECT_EQ(c->client_key_file, "/abs/key.pem");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST(LoadKubeconfig, MissingContextNamesTheFileAndTheContexts) {
  const std::string path = Write(testing::TempDir(), "config", kKubeconfig);
  StatusOr<KubeConfig> c = LoadKubeconfig(path, "staging");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(), "kubeconfig " + path +
                                      ": contexts: no entry named \"staging\" (have: dev, prod, "
                                      "gke, dangling)");
}

TEST(LoadKubeconfig, MissingClusterNamesTheField) {
  const std::string path = Write(testing::TempDir(), "config", kKubeconfig);
  StatusOr<KubeConfig> c = LoadKubeconfig(path, "dangling");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(path + ": clusters: no entry named \"nowhere\""),
            std::string::npos)
      << c.status();
}

TEST(LoadKubeconfig, ExecPluginsAreRefusedNamingTheField) {
  const std::string path = Write(testing::TempDir(), "config", kKubeconfig);
  StatusOr<KubeConfig> c = LoadKubeconfig(path, "gke");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find(path + ": users[name=exec-user].user.exec: exec credential "
                                             "plugins are not supported"),
            std::string::npos)
      << c.status();
}

TEST(LoadKubeconfig, MissingFileIsNotFound) {
  StatusOr<KubeConfig> c = LoadKubeconfig("/nonexistent/kube/config");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/kube/config"), std::string::npos) << c.status();
}

TEST(LoadKubeconfig, BadYamlNamesTheFileAndLine) {
  const std::string path = Write(testing::TempDir(), "config", "clusters:\n- name: [unclosed\n");
  StatusOr<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("kubeconfig " + path + ":"), std::string::npos) << c.status();
}

TEST(LoadKubeconfig, BadFieldsNameTheFieldPath) {
  const std::string dir = testing::TempDir();
  struct Case {
    std::string yaml;
    std::string expected;
  };
  const std::string head =
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
      "users:\n- name: u\n  user: {token: t}\n";
  for (const Case& c : std::vector<Case>{
           {head + "clusters:\n- name: k\n  cluster: {}\n",
            "clusters[name=k].cluster.server: is "
            "required"},
           {head + "clusters:\n- name: k\n  cluster: {server: 'https://x', "
                   "certificate-authority-data: '***'}\n",
            "clusters[name=k].cluster.certificate-authority-data: is not base64"},
           {head + "clusters:\n- name: k\n  cluster: {server: 'https://x', "
                   "insecure-skip-tls-verify: maybe}\n",
            "clusters[name=k].cluster.insecure-skip-tls-verify: must be true or false"},
           {head + "clusters:\n- name: k\n  cluster: {server: [a]}\n",
            "clusters[name=k].cluster.server: must be a string"},
           {"contexts: []\n", "current-context: not set"},
       }) {
    StatusOr<KubeConfig> got = LoadKubeconfig(Write(dir, "config", c.yaml));
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_NE(got.status().message().find(c.expected), std::string::npos) << got.status();
  }
}

TEST(InClusterConfig, ReadsTheServiceAccountDir) {
  const std::string dir = testing::TempDir();
  Write(dir, "token", "tok");
  Write(dir, "ca.crt", "pem");
  Write(dir, "namespace", "skrull-system\n");
  StatusOr<KubeConfig> c = InClusterConfig({"10.96.0.1", "443", dir});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->bearer_token_file, dir + "/token");
  EXPECT_EQ(c->certificate_authority_file, dir + "/ca.crt");
  EXPECT_EQ(c->default_namespace, "skrull-system");
}

TEST(InClusterConfig, BracketsAnIpv6Host) {
  const std::string dir = testing::TempDir();
  Write(dir, "token", "tok");
  Write(dir, "ca.crt", "pem");
  StatusOr<KubeConfig> c = InClusterConfig({"fd00:10:96::1", "443", dir});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00:10:96::1]:443");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST(InClusterConfig, OutsideAPodOrWithoutTokenFails) {
  StatusOr<KubeConfig> c = InClusterConfig({"", "", "/nonexistent"});
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  c = InClusterConfig({"10.0.0.1", "https", "/nonexistent"});
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  const std::string dir = testing::TempDir();
  Write(dir, "ca.crt", "pem");
  c = InClusterConfig({"10.0.0.1", "443", dir});
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find(dir + "/token"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace skrull::kube
