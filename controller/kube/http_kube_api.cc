#include "controller/kube/http_kube_api.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include <openssl/err.h>
#include <boost/asio/ssl.hpp>

#include <exception>
#include <system_error>
#include <utility>

#include "common/file_util.h"
#include "controller/kube/bearer_token.h"
#include "controller/kube/object_rules.h"
#include "controller/kube/rest_path.h"

namespace skrull::kube {

namespace {

using web::http::http_request;
using web::http::http_response;
using web::http::client::http_client;
using web::http::client::http_client_config;

// PEM text for the SSL context, read once at Create.
struct TlsMaterial {
  std::string ca;
  std::string cert;
  std::string key;
};

// PEM text from `data` or the file `file`; "" when neither is set.
StatusOr<std::string> PemFrom(const std::string& data, const std::string& file,
                              const std::string& field) {
  if (!data.empty()) return data;
  if (file.empty()) return std::string();
  StatusOr<std::string> text = ReadFileToString(file);
  if (!text.ok()) return text.status().WithContext(field);
  return text;
}

void ConfigureSsl(const TlsMaterial& tls, boost::asio::ssl::context& ctx) {
  if (!tls.ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(tls.ca));
  if (!tls.cert.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(tls.cert));
    ctx.use_private_key(boost::asio::buffer(tls.key), boost::asio::ssl::context::pem);
  }
}

// Loads the PEM into a scratch context so a bad file fails at Create, not
// inside cpprestsdk's connection setup.
Status CheckTls(const TlsMaterial& tls) {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23);
  const char* field = "certificate authority";
  try {
    if (!tls.ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(tls.ca));
    field = "client certificate";
    if (!tls.cert.empty()) ctx.use_certificate_chain(boost::asio::buffer(tls.cert));
    field = "client key";
    if (!tls.key.empty()) {
      ctx.use_private_key(boost::asio::buffer(tls.key), boost::asio::ssl::context::pem);
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string(field) + ": not usable PEM (" + e.what() + ")");
  }
  return OkStatus();
}

const char* PropagationName(Propagation p) {
  switch (p) {
    case Propagation::kForeground:
      return "Foreground";
    case Propagation::kOrphan:
      return "Orphan";
    case Propagation::kBackground:
      break;
  }
  return "Background";
}

// cpprestsdk reports TLS failures with OpenSSL's packed error codes, which
// the system category cannot name.
std::string Cause(const std::error_code& code) {
  std::string cause = code.message();
  const char* ssl = ERR_reason_error_string(static_cast<unsigned long>(code.value()));
  if (ssl != nullptr && cause.rfind("Unknown error", 0) == 0) {
    cause = ssl;
    if (cause == "certificate verify failed") {
      cause +=
          ": is the CA (certificate-authority, ca.crt) the one that signed the server's "
          "certificate, and does the certificate name this host?";
    }
  }
  return cause;
}

// `object` with the kind and apiVersion of `r` when it names none.
json WithKind(const Resource& r, json object) {
  if (object.is_object()) {
    if (!object.contains("kind")) object["kind"] = r.kind;
    if (!object.contains("apiVersion")) object["apiVersion"] = r.api_version;
  }
  return object;
}

// Cancels `target` when `source` is cancelled, for as long as it lives
// (unlike create_linked_source, whose callbacks stay on `source` forever).
class LinkedCancel {
 public:
  LinkedCancel(pplx::cancellation_token source, const pplx::cancellation_token_source& target)
      : source_(std::move(source)),
        registration_(source_.register_callback([target] { target.cancel(); })) {}
  ~LinkedCancel() { source_.deregister_callback(registration_); }
  LinkedCancel(const LinkedCancel&) = delete;
  LinkedCancel& operator=(const LinkedCancel&) = delete;

 private:
  pplx::cancellation_token source_;
  pplx::cancellation_token_registration registration_;
};

constexpr char kCancelledMessage[] = "cancelled: the controller is shutting down";

struct HttpAnswer {
  int code = 0;
  std::string body;
};

}  // namespace

struct HttpKubeApi::Impl {
  KubeConfig config;
  TlsMaterial tls;
  BearerToken token;
  std::unique_ptr<http_client> client;  // for everything but watches
  // Shutdown (CancelWatches, CancelAll): cancelling a token closes the
  // connections of the requests that carry it, in flight or later.
  pplx::cancellation_token_source cancel_watches;
  pplx::cancellation_token_source cancel_all;

  Impl(KubeConfig c, TlsMaterial t)
      : config(std::move(c)),
        tls(std::move(t)),
        token(config.bearer_token, config.bearer_token_file) {}

  http_client_config ClientConfig(std::chrono::seconds timeout) const {
    http_client_config cc;
    cc.set_timeout(timeout);
    cc.set_validate_certificates(!config.insecure_skip_tls_verify);
    TlsMaterial material = tls;
    cc.set_ssl_context_callback(
        [material](boost::asio::ssl::context& ctx) { ConfigureSsl(material, ctx); });
    return cc;
  }

  std::string Where(const std::string& method, const std::string& target) const {
    return method + " " + target + " (server " + config.server + ")";
  }

  // Sends one request on `c` with the current token; on a 401 from a token
  // file that has since changed, once more. `on_response` reads the answer
  // (the whole body, or the watch stream) on this thread.
  template <typename OnResponse>
  Status Send(http_client& c, const std::string& method, const std::string& target,
              const std::string* body, const std::string& content_type,
              const pplx::cancellation_token& cancel, OnResponse on_response) {
    for (int attempt = 0;; ++attempt) {
      if (cancel.is_canceled()) return Cancelled(method, target);
      SKRULL_ASSIGN_OR_RETURN(std::string bearer, token.Current());
      try {
        http_request req(method);
        req.set_request_uri(web::uri(target));
        req.headers().add("Accept", "application/json");
        req.headers().add("User-Agent", config.user_agent);
        if (!bearer.empty()) req.headers().add("Authorization", "Bearer " + bearer);
        if (body != nullptr) req.set_body(*body, content_type);
        http_response resp = c.request(req, cancel).get();
        if (resp.status_code() == 401 && attempt == 0 && token.Reload()) continue;
        return on_response(resp);
      } catch (const web::http::http_exception& e) {
        if (cancel.is_canceled()) return Cancelled(method, target);
        // what() names the step ("Error in SSL handshake"), the code the cause.
        return UnavailableError(Where(method, target) + ": " + e.what() + " (" +
                                Cause(e.error_code()) + ")");
      } catch (const std::exception& e) {
        if (cancel.is_canceled()) return Cancelled(method, target);
        return UnavailableError(Where(method, target) + ": " + e.what());
      }
    }
  }

  Status Cancelled(const std::string& method, const std::string& target) const {
    return UnavailableError(Where(method, target) + ": " + kCancelledMessage);
  }

  StatusOr<HttpAnswer> Call(const std::string& method, const std::string& target,
                            const std::string* body = nullptr,
                            const std::string& content_type = "application/json") {
    HttpAnswer answer;
    SKRULL_RETURN_IF_ERROR(Send(*client, method, target, body, content_type, cancel_all.get_token(),
                                [&](http_response& resp) {
                                  answer.code = resp.status_code();
                                  answer.body = resp.extract_utf8string(true).get();
                                  return OkStatus();
                                }));
    return answer;
  }

  // `Call` returning the answer's object; errors via HttpStatusToStatus.
  StatusOr<json> CallForObject(const std::string& method, const std::string& target,
                               const std::string* body = nullptr,
                               const std::string& content_type = "application/json") {
    SKRULL_ASSIGN_OR_RETURN(HttpAnswer a, Call(method, target, body, content_type));
    SKRULL_RETURN_IF_ERROR(HttpStatusToStatus(method, target, a.code, a.body));
    json parsed = json::parse(a.body, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) {
      return UnavailableError(Where(method, target) + ": HTTP " + std::to_string(a.code) +
                              " but the body is not a JSON object");
    }
    return parsed;
  }

  // `project`: applied to each item as its page arrives (null: kept whole).
  StatusOr<ListResult> ListPages(const Resource& r, const std::string& ns,
                                 const std::string& label_selector, int page_size,
                                 const std::function<json(const json&)>& project = nullptr);
};

HttpKubeApi::HttpKubeApi(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpKubeApi::~HttpKubeApi() = default;

const KubeConfig& HttpKubeApi::config() const { return impl_->config; }

void HttpKubeApi::CancelWatches() { impl_->cancel_watches.cancel(); }

void HttpKubeApi::CancelAll() {
  impl_->cancel_watches.cancel();
  impl_->cancel_all.cancel();
}

StatusOr<std::unique_ptr<HttpKubeApi>> HttpKubeApi::Create(const KubeConfig& config) {
  const std::string where =
      "Kubernetes API config" + (config.source.empty() ? "" : " (" + config.source + ")");
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return InvalidArgumentError(where + ": server \"" + config.server +
                                "\" must be an https:// (or, for tests, http://) URL");
  }
  if (config.server.rfind("http://", 0) == 0 && !config.allow_insecure_http) {
    return InvalidArgumentError(
        where + ": server \"" + config.server +
        "\" is plain http://: the bearer token and every object would cross the network "
        "unencrypted. Use the cluster's https:// URL, or pass --insecure-http for a "
        "test server on a trusted link");
  }
  if (!web::uri::validate(config.server) || web::uri(config.server).host().empty()) {
    return InvalidArgumentError(where + ": server \"" + config.server + "\" is not a valid URL");
  }
  TlsMaterial tls;
  StatusOr<std::string> pem = PemFrom(config.certificate_authority_data,
                                      config.certificate_authority_file, "certificate authority");
  if (!pem.ok()) return pem.status().WithContext(where);
  tls.ca = *pem;
  pem =
      PemFrom(config.client_certificate_data, config.client_certificate_file, "client certificate");
  if (!pem.ok()) return pem.status().WithContext(where);
  tls.cert = *pem;
  pem = PemFrom(config.client_key_data, config.client_key_file, "client key");
  if (!pem.ok()) return pem.status().WithContext(where);
  tls.key = *pem;
  if (tls.cert.empty() != tls.key.empty()) {
    return InvalidArgumentError(where + ": a client certificate needs a client key and back");
  }
  SKRULL_RETURN_IF_ERROR(CheckTls(tls).WithContext(where));
  if (config.list_page_size < 1) {
    return InvalidArgumentError(where + ": list_page_size must be >= 1");
  }
  auto impl = std::make_unique<Impl>(config, std::move(tls));
  SKRULL_RETURN_IF_ERROR(impl->token.Current().status().WithContext(where));
  impl->client = std::make_unique<http_client>(web::uri(config.server),
                                               impl->ClientConfig(config.request_timeout));
  return std::unique_ptr<HttpKubeApi>(new HttpKubeApi(std::move(impl)));
}

StatusOr<json> HttpKubeApi::Get(const Resource& r, const std::string& ns, const std::string& name) {
  return impl_->CallForObject("GET", ObjectPath(r, ns, name));
}

StatusOr<ListResult> HttpKubeApi::Impl::ListPages(const Resource& r, const std::string& ns,
                                                  const std::string& label_selector, int page_size,
                                                  const std::function<json(const json&)>& project) {
  ListResult result;
  std::string continue_token;
  do {
    std::string target = CollectionPath(r, ns) + "?limit=" + std::to_string(page_size);
    if (!label_selector.empty()) target += "&labelSelector=" + QueryEscape(label_selector);
    if (!continue_token.empty()) target += "&continue=" + QueryEscape(continue_token);
    StatusOr<json> page = CallForObject("GET", target);
    if (!page.ok()) return page.status();
    const json& items = (*page)["items"];
    if (!items.is_array() && !items.is_null()) {
      return UnavailableError(Where("GET", target) + ": the list's items are not an array");
    }
    if (items.is_array()) {
      for (const json& item : items) {
        result.items.push_back(project ? project(WithKind(r, item)) : WithKind(r, item));
      }
    }
    const json& meta = (*page)["metadata"];
    if (result.resource_version.empty())
      result.resource_version = MetaString(*page, "resourceVersion");
    continue_token = StringField(meta, "continue");
  } while (!continue_token.empty());
  return result;
}

StatusOr<ListResult> HttpKubeApi::List(const Resource& r, const std::string& ns,
                                       const std::string& label_selector) {
  StatusOr<ListResult> list = impl_->ListPages(r, ns, label_selector, impl_->config.list_page_size);
  if (!IsExpired(list.status())) return list;
  // A continue token outlived the server's history: start over in one page.
  return impl_->ListPages(r, ns, label_selector, 1 << 30);
}

StatusOr<ListResult> HttpKubeApi::ListProjected(const Resource& r, const std::string& ns,
                                                const std::string& label_selector,
                                                const std::function<json(const json&)>& project) {
  StatusOr<ListResult> list =
      impl_->ListPages(r, ns, label_selector, impl_->config.list_page_size, project);
  if (!IsExpired(list.status())) return list;
  return impl_->ListPages(r, ns, label_selector, 1 << 30, project);
}

StatusOr<json> HttpKubeApi::Create(const Resource& r, const std::string& ns, const json& object) {
  const std::string text = WithKind(r, object).dump();
  return impl_->CallForObject("POST", CollectionPath(r, ns), &text);
}

StatusOr<json> HttpKubeApi::Replace(const Resource& r, const std::string& ns,
                                    const std::string& name, const json& object,
                                    bool status_subresource) {
  const std::string text = WithKind(r, object).dump();
  return impl_->CallForObject("PUT", ObjectPath(r, ns, name, status_subresource), &text);
}

StatusOr<json> HttpKubeApi::Patch(const Resource& r, const std::string& ns, const std::string& name,
                                  PatchType type, const json& patch, bool status_subresource) {
  const std::string text = patch.dump();
  return impl_->CallForObject(
      "PATCH", ObjectPath(r, ns, name, status_subresource), &text,
      type == PatchType::kMerge ? "application/merge-patch+json" : "application/json-patch+json");
}

Status HttpKubeApi::Delete(const Resource& r, const std::string& ns, const std::string& name,
                           Propagation propagation) {
  const std::string target =
      ObjectPath(r, ns, name) + "?propagationPolicy=" + PropagationName(propagation);
  SKRULL_ASSIGN_OR_RETURN(HttpAnswer a, impl_->Call("DELETE", target));
  return HttpStatusToStatus("DELETE", target, a.code, a.body);
}

Status HttpKubeApi::Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                          const std::function<bool(const WatchEvent&)>& on_event) {
  const std::chrono::seconds timeout =
      options.timeout.count() > 0 ? options.timeout : std::chrono::seconds(300);
  std::string target = CollectionPath(r, ns) + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=" +
                       std::to_string(timeout.count());
  if (!options.resource_version.empty()) {
    target += "&resourceVersion=" + QueryEscape(options.resource_version);
  }
  if (!options.label_selector.empty()) {
    target += "&labelSelector=" + QueryEscape(options.label_selector);
  }
  // Its own client: the timeout outlasts the server's timeoutSeconds.
  http_client watch_client(web::uri(impl_->config.server),
                           impl_->ClientConfig(timeout + impl_->config.watch_timeout_margin));
  // Ends when the stream does (below), or at CancelWatches / CancelAll.
  pplx::cancellation_token_source cancel;
  LinkedCancel on_watches(impl_->cancel_watches.get_token(), cancel);
  LinkedCancel on_all(impl_->cancel_all.get_token(), cancel);
  const std::string where = impl_->Where("GET", target);
  Status result = impl_->Send(
      watch_client, "GET", target, nullptr, "", cancel.get_token(),
      [&](http_response& resp) -> Status {
        if (resp.status_code() != 200) {
          return HttpStatusToStatus("GET", target, resp.status_code(),
                                    resp.extract_utf8string(true).get());
        }
        concurrency::streams::istream body = resp.body();
        while (true) {
          concurrency::streams::container_buffer<std::string> line;
          const size_t n = body.read_line(line).get();
          if (n == 0 && line.collection().empty() && body.is_eof()) return OkStatus();
          if (line.collection().empty()) continue;
          json event = json::parse(line.collection(), nullptr, /*allow_exceptions=*/false);
          const std::string type = StringField(event, "type");
          if (type.empty() || !event["object"].is_object()) {
            return UnavailableError(where +
                                    ": not a watch event: " + line.collection().substr(0, 200));
          }
          if (type == "ERROR") {
            const json& s = event["object"];
            const int code =
                s.contains("code") && s["code"].is_number_integer() ? s["code"].get<int>() : 500;
            return HttpStatusToStatus("GET", target, code, s.dump());
          }
          WatchEvent e;
          bool known = false;
          for (WatchEvent::Type t : {WatchEvent::Type::kAdded, WatchEvent::Type::kModified,
                                     WatchEvent::Type::kDeleted, WatchEvent::Type::kBookmark}) {
            if (type == WatchEventTypeName(t)) {
              e.type = t;
              known = true;
            }
          }
          if (!known) continue;  // a type from a newer server
          e.object = std::move(event["object"]);
          if (!on_event(e)) return OkStatus();
        }
      });
  const bool shut_down = cancel.get_token().is_canceled();
  cancel.cancel();  // closes the connection if the stream is still open
  if (shut_down) return impl_->Cancelled("GET", target);
  if (!result.ok() && result.message().find(": HTTP ") == std::string::npos &&
      result.code() == StatusCode::kUnavailable) {
    return UnavailableError(result.message() +
                            " (the watch stream broke; resume from the last "
                            "resourceVersion)");
  }
  return result;
}

}  // namespace skrull::kube
