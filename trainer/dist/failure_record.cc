#include "trainer/dist/failure_record.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"

namespace skrull::dist {

std::string RankFailurePath(const std::string& output_dir, int rank) {
  return output_dir + "/ranks/rank-" + std::to_string(rank) + "/failure.json";
}

bool IsPeerFailure(const Status& status) {
  if (status.code() == StatusCode::kUnavailable) return true;
  const std::string& m = status.message();
  const size_t c10d = m.find("c10d ");
  return c10d != std::string::npos && m.find(" failed on ", c10d) != std::string::npos;
}

FailureRecord MakeFailureRecord(int rank, const std::string& run_id, const Status& status) {
  FailureRecord r;
  r.rank = rank;
  r.run_id = run_id;
  r.unix_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  r.peer = IsPeerFailure(status);
  r.status = StatusCodeName(status.code());
  r.message = status.message().substr(0, kMaxFailureMessageBytes);
  return r;
}

std::string FormatFailureRecord(const FailureRecord& r) {
  const nlohmann::ordered_json j = {{"schema", kFailureRecordSchema},
                                    {"rank", r.rank},
                                    {"run_id", r.run_id},
                                    {"unix_micros", r.unix_micros},
                                    {"cause", r.peer ? "peer" : "own"},
                                    {"status", r.status},
                                    {"message", r.message}};
  // A message is mostly ASCII; replace invalid UTF-8 rather than throw.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

StatusOr<FailureRecord> ParseFailureRecord(const std::string& text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError(origin + ": not a JSON object");
  JsonFields f(j, origin);
  FailureRecord r;
  SKRULL_RETURN_IF_ERROR(f.RequiredInt("schema", 1, kFailureRecordSchema).status());
  SKRULL_ASSIGN_OR_RETURN(int64_t rank, f.RequiredInt("rank", 0, 1 << 30));
  r.rank = static_cast<int>(rank);
  SKRULL_ASSIGN_OR_RETURN(r.run_id, f.RequiredString("run_id"));
  SKRULL_ASSIGN_OR_RETURN(r.unix_micros, f.RequiredInt("unix_micros", 0));
  SKRULL_ASSIGN_OR_RETURN(std::string cause, f.RequiredString("cause"));
  if (cause != "own" && cause != "peer") {
    return f.Error("cause", "must be \"own\" or \"peer\"", &j["cause"]);
  }
  r.peer = cause == "peer";
  SKRULL_ASSIGN_OR_RETURN(r.status, f.OptionalString("status"));
  SKRULL_ASSIGN_OR_RETURN(r.message, f.OptionalString("message"));
  return r;
}

Status WriteFailureRecord(const std::string& output_dir, const FailureRecord& record) {
  return WriteFileAtomically(RankFailurePath(output_dir, record.rank), FormatFailureRecord(record));
}

std::optional<FailureRecord> ReadFailureRecord(const std::string& output_dir, int rank,
                                               const std::string& run_id) {
  const std::string path = RankFailurePath(output_dir, rank);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > static_cast<uintmax_t>(kMaxFailureRecordBytes)) return std::nullopt;
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return std::nullopt;
  StatusOr<FailureRecord> r = ParseFailureRecord(*text, path);
  if (!r.ok() || r->rank != rank || r->run_id != run_id) return std::nullopt;
  return *r;
}

namespace {

bool LauncherMaySendSignal(int signal) {
  return signal == SIGTERM || signal == SIGKILL || signal == SIGINT || signal == SIGHUP;
}

// Smaller is stronger evidence of having failed first (the header's classes).
int EvidenceClass(const FailedRank& f) {
  if (f.record && !f.record->peer) return 1;
  if (f.signal != 0 && !(f.stopped_by_launcher && LauncherMaySendSignal(f.signal))) return 1;
  if (!f.record && !f.stopped_by_launcher) return 2;
  if (f.record) return 3;
  return 4;
}

}  // namespace

size_t PickFailedRank(const std::vector<FailedRank>& ranks) {
  SKRULL_CHECK(!ranks.empty());
  auto key = [](const FailedRank& f) {
    return std::make_tuple(EvidenceClass(f), f.record ? f.record->unix_micros : f.seen_unix_micros);
  };
  size_t best = 0;
  for (size_t i = 1; i < ranks.size(); ++i) {
    if (key(ranks[i]) < key(ranks[best])) best = i;
  }
  return best;
}

}  // namespace skrull::dist
