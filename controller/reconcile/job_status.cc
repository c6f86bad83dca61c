#include "controller/reconcile/job_status.h"

#include <cctype>
#include <cstdio>
#include <ctime>

#include "controller/reconcile/json_fields.h"

namespace skrull::controller {
namespace {

using json = nlohmann::json;

using fields::At;
using fields::Int;
using fields::Str;

std::optional<Clock::time_point> Time(const json& j, const char* key) {
  return ParseTime(Str(j, key));
}

void PutTime(json& j, const char* key, const std::optional<Clock::time_point>& t) {
  if (t) j[key] = FormatTime(*t);
}

// RFC 7386: the patch that turns `from` into `to`.
json MergePatch(const json& from, const json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  json patch = json::object();
  for (auto it = to.begin(); it != to.end(); ++it) {
    auto old = from.find(it.key());
    if (old == from.end()) {
      patch[it.key()] = it.value();
    } else if (*old != it.value()) {
      patch[it.key()] =
          old->is_object() && it.value().is_object() ? MergePatch(*old, it.value()) : it.value();
    }
  }
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (!to.contains(it.key())) patch[it.key()] = nullptr;
  }
  return patch;
}

}  // namespace

bool JobStatus::operator==(const JobStatus& o) const {
  return phase == o.phase && reason == o.reason && message == o.message &&
         observed_generation == o.observed_generation && restarts == o.restarts &&
         start_time == o.start_time && completion_time == o.completion_time &&
         bucket_size_tokens == o.bucket_size_tokens && nodes == o.nodes &&
         conditions == o.conditions && tuning == o.tuning && progress == o.progress;
}

std::string FormatTime(Clock::time_point t) {
  const std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<Clock::time_point> ParseTime(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  std::string rest = text.substr(static_cast<size_t>(consumed));
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    rest = rest.substr(i);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t tt = timegm(&tm);
  if (tt == static_cast<std::time_t>(-1)) return std::nullopt;
  return Clock::from_time_t(tt);
}

json JobStatusToJson(const JobStatus& s) {
  json j = json::object();
  if (!s.phase.empty()) j["phase"] = s.phase;
  if (!s.reason.empty()) j["reason"] = s.reason;
  if (!s.message.empty()) j["message"] = s.message;
  j["observedGeneration"] = s.observed_generation;
  if (s.restarts > 0) j["restarts"] = s.restarts;
  PutTime(j, "startTime", s.start_time);
  PutTime(j, "completionTime", s.completion_time);
  if (s.bucket_size_tokens > 0) j["bucketSizeTokens"] = s.bucket_size_tokens;
  if (s.nodes) {
    j["nodes"] = {{"desired", s.nodes->desired},
                  {"running", s.nodes->running},
                  {"succeeded", s.nodes->succeeded},
                  {"failed", s.nodes->failed},
                  {"missing", s.nodes->missing}};
  }
  json conditions = json::array();
  for (const JobCondition& c : s.conditions) {
    json cj = {{"type", c.type},
               {"status", c.status ? "True" : "False"},
               {"reason", c.reason},
               {"message", c.message}};
    PutTime(cj, "lastTransitionTime", c.last_transition_time);
    conditions.push_back(std::move(cj));
  }
  j["conditions"] = std::move(conditions);
  if (!s.tuning.is_null()) j["tuning"] = s.tuning;
  if (!s.progress.is_null()) j["progress"] = s.progress;
  return j;
}

JobStatus JobStatusFromJson(const json& j) {
  JobStatus s;
  s.phase = Str(j, "phase");
  s.reason = Str(j, "reason");
  s.message = Str(j, "message");
  s.observed_generation = Int(j, "observedGeneration");
  s.restarts = static_cast<int>(Int(j, "restarts"));
  s.start_time = Time(j, "startTime");
  s.completion_time = Time(j, "completionTime");
  s.bucket_size_tokens = Int(j, "bucketSizeTokens");
  if (const json& n = At(j, "nodes"); n.is_object()) {
    s.nodes = NodeCounts{static_cast<int>(Int(n, "desired")), static_cast<int>(Int(n, "running")),
                         static_cast<int>(Int(n, "succeeded")), static_cast<int>(Int(n, "failed")),
                         static_cast<int>(Int(n, "missing"))};
  }
  if (const json& cs = At(j, "conditions"); cs.is_array()) {
    for (const json& c : cs) {
      if (Str(c, "type").empty()) continue;
      s.conditions.push_back({Str(c, "type"), Str(c, "status") == "True", Str(c, "reason"),
                              Str(c, "message"), Time(c, "lastTransitionTime")});
    }
  }
  if (At(j, "tuning").is_object()) s.tuning = At(j, "tuning");
  if (At(j, "progress").is_object()) s.progress = At(j, "progress");
  return s;
}

json JobStatusMergePatch(const json& observed, const JobStatus& status) {
  return MergePatch(observed.is_object() ? observed : json::object(), JobStatusToJson(status));
}

}  // namespace skrull::controller
