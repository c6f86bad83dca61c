// TrainerEndpointProgress over cpprestsdk. Its own file because cpprest's
// headers (Boost.Asio) are slow to compile.
#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include "controller/tuner/exposition_progress.h"

namespace skrull::tuner {
namespace {

// GET `url`, reading at most kMaxExpositionBytes of body.
StatusOr<std::string> GetPage(const std::string& url, std::chrono::milliseconds timeout) {
  const std::string request = "GET " + url;
  try {
    web::http::client::http_client_config config;
    config.set_timeout(timeout);
    web::http::client::http_client client(web::uri(url), config);
    web::http::http_response response = client.request(web::http::methods::GET).get();
    if (response.status_code() != web::http::status_codes::OK) {
      return UnavailableError(request + ": HTTP " + std::to_string(response.status_code()));
    }
    concurrency::streams::container_buffer<std::string> page;
    auto body = response.body();
    size_t total = 0;
    while (total <= kMaxExpositionBytes) {
      const size_t got = body.read(page, kMaxExpositionBytes + 1 - total).get();
      if (got == 0) break;
      total += got;
    }
    if (total > kMaxExpositionBytes) {
      return InvalidArgumentError(request + ": a metrics page over " +
                                  std::to_string(kMaxExpositionBytes) + " bytes");
    }
    // The buffer may hold room beyond what was written: keep the `total` bytes read.
    return page.collection().substr(0, total);
  } catch (const std::exception& e) {
    return UnavailableError(request + ": " + e.what());
  }
}

}  // namespace

ProgressSource TrainerEndpointProgress(std::function<std::string(const api::JobSpec&)> url_of,
                                       std::chrono::milliseconds timeout) {
  return
      [url_of = std::move(url_of), timeout](const api::JobSpec& spec) -> StatusOr<nlohmann::json> {
        const std::string url = url_of(spec);
        SKRULL_ASSIGN_OR_RETURN(std::string page, GetPage(url, timeout));
        StatusOr<nlohmann::json> progress = ProgressFromExposition(page, spec);
        if (!progress.ok()) return progress.status().WithContext(url);
        return progress;
      };
}

}  // namespace skrull::tuner
