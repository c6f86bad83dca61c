// Pushing a registry to a Prometheus Pushgateway through prometheus-cpp's
// Gateway, with the two things 1.0.x gets wrong for us fixed on our side:
//  * Gateway::Push() sends POST and Gateway::PushAdd() sends PUT, the reverse
//    of the Go and Python clients. We want PUT (replace the whole group), so
//    PushReplacingGroup calls PushAdd(); a test pins the method on the wire.
//  * Gateway sets no curl timeout; we run the push on a detached thread and
//    stop waiting after a deadline.
// Private to trainer/metrics; TrainerMetrics::PushFinal is the public entry.
#ifndef SKRULL_TRAINER_METRICS_PUSHGATEWAY_H_
#define SKRULL_TRAINER_METRICS_PUSHGATEWAY_H_

#include <prometheus/collectable.h>

#include <map>
#include <memory>
#include <string>

#include "common/status.h"

namespace skrull::metrics {

// A Pushgateway base URL split the way prometheus::Gateway wants it: it builds
// `host + ":" + port + "/metrics/job/..."`, so a path prefix rides on `port`.
struct PushgatewayAddress {
  std::string host;  // scheme and host: "http://pgw.monitoring", "http://[::1]"
  std::string port;  // port and optional path prefix: "9091", "443/pgw"
  std::string url() const { return host + ":" + port; }
};

// Parses "http[s]://host[:port][/prefix]". InvalidArgument names the URL and
// what is wrong (scheme, empty host, bad port, query string).
StatusOr<PushgatewayAddress> ParsePushgatewayUrl(const std::string& url);

// Percent-encodes a job name or label value for a Pushgateway URL path.
// REQUIRES: no '/' in `value` (the gateway cannot take it without @base64).
std::string EncodePushgatewayPathValue(const std::string& value);

// PUTs the collectable's current exposition to
// <address>/metrics/job/<job>{/<label>/<value>} (grouping labels in order).
// Unavailable on a connection error, an HTTP error status or no answer within
// `timeout_seconds`; the message names the URL.
Status PushReplacingGroup(const PushgatewayAddress& address, const std::string& job,
                          const std::map<std::string, std::string>& grouping_labels,
                          const std::shared_ptr<prometheus::Collectable>& collectable,
                          double timeout_seconds);

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_PUSHGATEWAY_H_
