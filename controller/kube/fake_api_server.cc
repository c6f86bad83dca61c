#include "controller/kube/fake_api_server.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "controller/kube/kube_errors.h"
#include "controller/kube/object_rules.h"
#include "controller/kube/rest_path.h"
#include "controller/kube/tls_server.h"

namespace skrull::kube {

namespace {

const char kJson[] = "application/json";

void SendStatus(http::HttpResponseWriter& w, const Status& s) {
  const KubeErrorParts p = ParseKubeError(s);
  w.Send(p.code, kJson, StatusObject(p.code, p.reason, p.message).dump());
}

void SendError(http::HttpResponseWriter& w, int code, const std::string& message) {
  w.Send(code, kJson, StatusObject(code, ReasonForHttpCode(code), message).dump());
}

void SendObject(http::HttpResponseWriter& w, const StatusOr<json>& result, int ok_code = 200) {
  if (!result.ok()) return SendStatus(w, result.status());
  w.Send(ok_code, kJson, result->dump());
}

bool IsTrue(const std::string& v) { return v == "1" || v == "true"; }

}  // namespace

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : options_(std::move(options)), memory_(options_.memory), token_(options_.token) {
  resources_ = {PodsResource(),   ServicesResource(), ConfigMapsResource(),
                EventsResource(), LeasesResource(),   SkrullJobsResource()};
}

StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(FakeApiServerOptions options) {
  std::unique_ptr<FakeApiServer> s(new FakeApiServer(std::move(options)));
  http::HttpServerOptions o;
  o.bind_address = "127.0.0.1";
  o.threads = s->options_.threads;
  o.max_request_bytes = 8 << 20;
  if (!s->options_.tls_cert_pem.empty()) {
    SKRULL_ASSIGN_OR_RETURN(o.wrap_connection,
                            MakeTlsWrapper(s->options_.tls_cert_pem, s->options_.tls_key_pem,
                                           s->options_.tls_client_ca_pem));
    s->tls_ = true;
  }
  FakeApiServer* raw = s.get();
  SKRULL_ASSIGN_OR_RETURN(
      s->server_, http::HttpServer::Start(
                      std::move(o), [raw](const http::HttpRequest& req,
                                          http::HttpResponseWriter& w) { raw->Handle(req, w); }));
  return s;
}

FakeApiServer::~FakeApiServer() {
  memory_.StopWatches();  // lets the watch handlers return before the threads are joined
  server_.reset();
}

std::string FakeApiServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port());
}

void FakeApiServer::AddResource(const Resource& r) {
  std::lock_guard<std::mutex> lock(mu_);
  resources_.push_back(r);
}

void FakeApiServer::SetToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = token;
}

void FakeApiServer::FailNextRequests(const std::string& method, int count, int http_code) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count > 0) injected_.push_back(Injected{method, count, http_code});
}

std::vector<std::string> FakeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int FakeApiServer::TakeInjected(const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = injected_.begin(); it != injected_.end(); ++it) {
    if (it->method != method) continue;
    const int code = it->http_code;
    if (--it->count <= 0) injected_.erase(it);
    return code;
  }
  return 0;
}

bool FakeApiServer::FindResource(const std::string& prefix, const std::string& plural,
                                 Resource* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Resource& r : resources_) {
    if (r.prefix == prefix && r.plural == plural) {
      *out = r;
      return true;
    }
  }
  return false;
}

void FakeApiServer::Handle(const http::HttpRequest& req, http::HttpResponseWriter& w) {
  std::string token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req.method + " " + req.target);
    token = token_;
  }
  if (!token.empty()) {
    const std::string* auth = req.Header("authorization");
    if (auth == nullptr || *auth != "Bearer " + token) return SendError(w, 401, "Unauthorized");
  }
  std::optional<ResourcePath> path = ParseResourcePath(req.path);
  Resource r;
  if (!path || !FindResource(path->prefix, path->plural, &r)) {
    return SendError(w, 404, "the server could not find the requested resource");
  }
  std::map<std::string, std::string> query = ParseQuery(req.query);
  const bool watch = IsTrue(query["watch"]);
  if (int code = TakeInjected(watch ? "WATCH" : req.method); code != 0) {
    return SendError(w, code, "injected by FakeApiServer::FailNextRequests");
  }
  const std::string& ns = path->ns;
  const std::string& name = path->name;
  json body;
  if (!req.body.empty()) {
    body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return SendError(w, 400, "the request body is not JSON");
  }
  if (name.empty() && req.method == "GET") {
    if (watch) return ServeWatch(r, ns, req.query, w);
    const int64_t limit = std::strtoll(query["limit"].c_str(), nullptr, 10);
    StatusOr<ListPageResult> page =
        memory_.ListPage(r, ns, query["labelSelector"], limit, query["continue"]);
    if (!page.ok()) return SendStatus(w, page.status());
    json list = {{"kind", r.kind + "List"},
                 {"apiVersion", r.api_version},
                 {"metadata", {{"resourceVersion", page->resource_version}}},
                 {"items", json::array()}};
    if (!page->continue_token.empty()) list["metadata"]["continue"] = page->continue_token;
    for (json& item : page->items) {
      // As the API server does for built-in types: items carry no kind.
      item.erase("kind");
      item.erase("apiVersion");
      list["items"].push_back(std::move(item));
    }
    w.Send(200, kJson, list.dump());
    return;
  }
  if (name.empty() && req.method == "POST") return SendObject(w, memory_.Create(r, ns, body), 201);
  if (name.empty()) return SendError(w, 405, req.method + " is not allowed on a collection");
  if (req.method == "GET" && !path->status) return SendObject(w, memory_.Get(r, ns, name));
  if (req.method == "PUT") return SendObject(w, memory_.Replace(r, ns, name, body, path->status));
  if (req.method == "PATCH") {
    const std::string* type = req.Header("content-type");
    const std::string content_type = type == nullptr ? "" : type->substr(0, type->find(';'));
    if (content_type != "application/merge-patch+json" &&
        content_type != "application/json-patch+json") {
      return SendError(w, 415,
                       "the body of the request was in an unknown format - accepted media types "
                       "include: application/json-patch+json, application/merge-patch+json");
    }
    const PatchType pt =
        content_type == "application/merge-patch+json" ? PatchType::kMerge : PatchType::kJson;
    return SendObject(w, memory_.Patch(r, ns, name, pt, body, path->status));
  }
  if (req.method == "DELETE" && !path->status) {
    std::string policy = query["propagationPolicy"];
    if (policy.empty()) policy = StringField(body, "propagationPolicy");
    Propagation p = Propagation::kBackground;
    if (policy == "Foreground") {
      p = Propagation::kForeground;
    } else if (policy == "Orphan") {
      p = Propagation::kOrphan;
    } else if (!policy.empty() && policy != "Background") {
      return SendError(w, 400, "unknown propagationPolicy \"" + policy + "\"");
    }
    Status s = memory_.Delete(r, ns, name, p);
    if (!s.ok()) return SendStatus(w, s);
    const json success = {{"kind", "Status"},
                          {"apiVersion", "v1"},
                          {"metadata", json::object()},
                          {"status", "Success"},
                          {"details", {{"name", name}, {"kind", r.plural}}}};
    w.Send(200, kJson, success.dump());
    return;
  }
  SendError(w, 405, req.method + " is not allowed here");
}

void FakeApiServer::ServeWatch(const Resource& r, const std::string& ns, const std::string& query,
                               http::HttpResponseWriter& w) {
  std::map<std::string, std::string> q = ParseQuery(query);
  WatchOptions o;
  o.resource_version = q["resourceVersion"];
  o.label_selector = q["labelSelector"];
  const long timeout = std::strtol(q["timeoutSeconds"].c_str(), nullptr, 10);
  o.timeout = std::chrono::seconds(timeout > 0 ? timeout : 1800);
  const bool bookmarks = IsTrue(q["allowWatchBookmarks"]);
  if (!w.StartChunked(200, kJson)) return;
  Status s = memory_.Watch(r, ns, o, [&](const WatchEvent& e) {
    if (e.type == WatchEvent::Type::kBookmark && !bookmarks) return true;
    json line = {{"type", WatchEventTypeName(e.type)}, {"object", e.object}};
    return w.WriteChunk(line.dump() + "\n") && !w.stopping();
  });
  if (!s.ok() && !HasHttpCode(s)) return;  // cut: no final chunk
  if (!s.ok()) {
    const KubeErrorParts p = ParseKubeError(s);
    json error = {{"type", "ERROR"}, {"object", StatusObject(p.code, p.reason, p.message)}};
    if (!w.WriteChunk(error.dump() + "\n")) return;
  }
  w.FinishChunked();
}

}  // namespace skrull::kube
