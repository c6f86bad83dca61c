#include "controller/kube/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "common/file_util.h"

namespace skrull::kube {

namespace {

std::string TrimSpace(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

// Standard base64 (padding optional, whitespace ignored); nullopt when malformed.
std::optional<std::string> DecodeBase64(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=' || std::isspace(static_cast<unsigned char>(c))) {
      continue;
    } else {
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// Reads a kubeconfig's sections; every error names the file and the field.
class KubeconfigReader {
 public:
  KubeconfigReader(std::string path, YAML::Node root)
      : path_(std::move(path)), root_(std::move(root)) {
    dir_ = std::filesystem::path(path_).parent_path().string();
  }

  Status Error(StatusCode code, const std::string& field, const std::string& what) const {
    return Status(code, "kubeconfig " + path_ + ": " + field + ": " + what);
  }

  // The entry of the list `section` ("clusters", ...) named `name`: its
  // `inner` map ("cluster", ...). `field` is set to "section[name=x].inner".
  StatusOr<YAML::Node> Named(const std::string& section, const std::string& inner,
                             const std::string& name, std::string* field) const {
    const YAML::Node list = root_[section];
    std::vector<std::string> have;
    if (list && list.IsSequence()) {
      for (const YAML::Node& entry : list) {
        if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) continue;
        const std::string entry_name = entry["name"].as<std::string>();
        if (entry_name == name) {
          *field = section + "[name=" + name + "]." + inner;
          const YAML::Node body = entry[inner];
          if (body && !body.IsMap())
            return Error(StatusCode::kInvalidArgument, *field, "must be a map");
          return body ? body : YAML::Node(YAML::NodeType::Map);
        }
        have.push_back(entry_name);
      }
    }
    std::string names;
    for (const std::string& h : have) names += (names.empty() ? "" : ", ") + h;
    return Error(
        StatusCode::kFailedPrecondition, section,
        "no entry named \"" + name + "\" (have: " + (names.empty() ? "none" : names) + ")");
  }

  // A scalar string field of `node`, "" when absent.
  StatusOr<std::string> String(const YAML::Node& node, const std::string& field,
                               const std::string& key) const {
    const YAML::Node v = node[key];
    if (!v || v.IsNull()) return std::string();
    if (!v.IsScalar())
      return Error(StatusCode::kInvalidArgument, field + "." + key, "must be a string");
    return v.as<std::string>();
  }

  // "<key>-data" (base64) into *data or "<key>" (a file path) into *file.
  Status DataOrFile(const YAML::Node& node, const std::string& field, const std::string& key,
                    std::string* data, std::string* file) const {
    SKRULL_ASSIGN_OR_RETURN(std::string encoded, String(node, field, key + "-data"));
    if (!encoded.empty()) {
      std::optional<std::string> decoded = DecodeBase64(encoded);
      if (!decoded) {
        return Error(StatusCode::kInvalidArgument, field + "." + key + "-data", "is not base64");
      }
      *data = *decoded;
      return OkStatus();
    }
    SKRULL_ASSIGN_OR_RETURN(*file, String(node, field, key));
    *file = Resolve(*file);
    return OkStatus();
  }

  std::string Resolve(const std::string& file) const {
    if (file.empty() || file[0] == '/' || dir_.empty()) return file;
    return (std::filesystem::path(dir_) / file).string();
  }

 private:
  std::string path_;
  std::string dir_;
  YAML::Node root_;
};

Status ReadUser(const KubeconfigReader& k, const YAML::Node& user, const std::string& field,
                KubeConfig* config) {
  for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
    if (user[unsupported]) {
      return k.Error(
          StatusCode::kFailedPrecondition, field + "." + unsupported,
          std::string(std::string(unsupported) == "exec" ? "exec credential plugins are"
                                                         : "this authentication method is") +
              " not supported; use token, tokenFile or "
              "client-certificate-data/client-key-data");
    }
  }
  SKRULL_ASSIGN_OR_RETURN(config->bearer_token, k.String(user, field, "token"));
  SKRULL_ASSIGN_OR_RETURN(std::string token_file, k.String(user, field, "tokenFile"));
  config->bearer_token_file = k.Resolve(token_file);
  SKRULL_RETURN_IF_ERROR(k.DataOrFile(user, field, "client-certificate",
                                      &config->client_certificate_data,
                                      &config->client_certificate_file));
  SKRULL_RETURN_IF_ERROR(
      k.DataOrFile(user, field, "client-key", &config->client_key_data, &config->client_key_file));
  const bool has_cert =
      !config->client_certificate_data.empty() || !config->client_certificate_file.empty();
  const bool has_key = !config->client_key_data.empty() || !config->client_key_file.empty();
  if (has_cert != has_key) {
    return k.Error(StatusCode::kInvalidArgument, field,
                   "client-certificate and client-key go together (one is missing)");
  }
  return OkStatus();
}

StatusOr<KubeConfig> ReadKubeconfig(const KubeconfigReader& k, const YAML::Node& root,
                                    const std::string& path, std::string context) {
  if (!root.IsMap()) return k.Error(StatusCode::kInvalidArgument, "(top level)", "must be a map");
  if (context.empty()) {
    SKRULL_ASSIGN_OR_RETURN(context, k.String(root, "(top level)", "current-context"));
    if (context.empty()) {
      return k.Error(StatusCode::kFailedPrecondition, "current-context",
                     "not set and no context was given (pass one, or `kubectl config "
                     "use-context`)");
    }
  }
  std::string ctx_field, cluster_field, user_field;
  SKRULL_ASSIGN_OR_RETURN(YAML::Node ctx, k.Named("contexts", "context", context, &ctx_field));
  SKRULL_ASSIGN_OR_RETURN(std::string cluster_name, k.String(ctx, ctx_field, "cluster"));
  SKRULL_ASSIGN_OR_RETURN(std::string user_name, k.String(ctx, ctx_field, "user"));
  SKRULL_ASSIGN_OR_RETURN(std::string ns, k.String(ctx, ctx_field, "namespace"));
  if (cluster_name.empty()) {
    return k.Error(StatusCode::kInvalidArgument, ctx_field + ".cluster", "is required");
  }
  KubeConfig config;
  config.source = "kubeconfig " + path + ", context " + context;
  if (!ns.empty()) config.default_namespace = ns;
  SKRULL_ASSIGN_OR_RETURN(YAML::Node cluster,
                          k.Named("clusters", "cluster", cluster_name, &cluster_field));
  SKRULL_ASSIGN_OR_RETURN(config.server, k.String(cluster, cluster_field, "server"));
  if (config.server.empty()) {
    return k.Error(StatusCode::kInvalidArgument, cluster_field + ".server", "is required");
  }
  for (const char* unsupported : {"proxy-url", "tls-server-name"}) {
    if (cluster[unsupported]) {
      return k.Error(StatusCode::kFailedPrecondition, cluster_field + "." + unsupported,
                     "is not supported");
    }
  }
  SKRULL_RETURN_IF_ERROR(k.DataOrFile(cluster, cluster_field, "certificate-authority",
                                      &config.certificate_authority_data,
                                      &config.certificate_authority_file));
  if (const YAML::Node insecure = cluster["insecure-skip-tls-verify"]) {
    bool value = false;
    if (!insecure.IsScalar() || !YAML::convert<bool>::decode(insecure, value)) {
      return k.Error(StatusCode::kInvalidArgument, cluster_field + ".insecure-skip-tls-verify",
                     "must be true or false");
    }
    config.insecure_skip_tls_verify = value;
  }
  if (!user_name.empty()) {
    SKRULL_ASSIGN_OR_RETURN(YAML::Node user, k.Named("users", "user", user_name, &user_field));
    SKRULL_RETURN_IF_ERROR(ReadUser(k, user, user_field, &config));
  }
  return config;
}

}  // namespace

StatusOr<KubeConfig> InClusterConfig(const InClusterEnv& env) {
  if (env.service_host.empty() || env.service_port.empty()) {
    return FailedPreconditionError(
        std::string("in-cluster config: ") + kServiceHostEnv + " and " + kServicePortEnv +
        " must be set (they are in a pod); outside a cluster use a kubeconfig");
  }
  if (env.service_port.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError(std::string("in-cluster config: ") + kServicePortEnv +
                                ": not a port number (got \"" + env.service_port + "\")");
  }
  const std::string host =
      env.service_host.find(':') != std::string::npos && env.service_host.front() != '['
          ? "[" + env.service_host + "]"
          : env.service_host;
  KubeConfig config;
  config.source = "in-cluster service account " + env.service_account_dir;
  config.server = "https://" + host + ":" + env.service_port;
  config.bearer_token_file = env.service_account_dir + "/token";
  config.certificate_authority_file = env.service_account_dir + "/ca.crt";
  for (const std::string& required :
       {config.bearer_token_file, config.certificate_authority_file}) {
    if (!std::filesystem::exists(required)) {
      return NotFoundError("in-cluster config: " + required +
                           " is missing (is a service account token mounted? "
                           "automountServiceAccountToken must not be false)");
    }
  }
  StatusOr<std::string> ns = ReadFileToString(env.service_account_dir + "/namespace");
  if (ns.ok() && !TrimSpace(*ns).empty()) config.default_namespace = TrimSpace(*ns);
  return config;
}

StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status().WithContext("kubeconfig");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("kubeconfig " + path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                std::to_string(e.mark.column + 1) + ": not YAML: " + e.msg);
  }
  KubeconfigReader reader(path, root);
  try {
    return ReadKubeconfig(reader, root, path, context);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("kubeconfig " + path + ":" + std::to_string(e.mark.line + 1) +
                                ": " + e.msg);
  }
}

}  // namespace skrull::kube
