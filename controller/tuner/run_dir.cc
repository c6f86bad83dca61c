#include "controller/tuner/run_dir.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "trainer/metrics/oom_record.h"

namespace skrull::tuner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// "<path>:<line>:<column>: not JSON: <what>" from nlohmann's byte offset.
Status NotJson(const std::string& text, const std::string& where, const json::parse_error& e,
               size_t line_base = 0) {
  size_t line = 1, column = 1;
  const size_t end = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  // nlohmann's text is "[json.exception.parse_error.101] parse error at line
  // L, column C: <what>"; its position is replaced by ours (of the file).
  std::string what = e.what();
  if (const size_t at = what.find("parse error"); at != std::string::npos) {
    const size_t colon = what.find(": ", at);
    what = colon != std::string::npos ? what.substr(colon + 2) : what.substr(at);
  }
  // `line_base`: `text` is that line of the file, not the whole file.
  if (line_base > 0) line += line_base - 1;
  return InvalidArgumentError(where + ":" + std::to_string(line) + ":" + std::to_string(column) +
                              ": not JSON: " + what);
}

// `text` as a JSON object; errors name `where` (and `line`, when `text` is
// that line of the file).
StatusOr<json> ParseObject(const std::string& text, const std::string& where, size_t line = 0) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return NotJson(text, where, e, line);
  }
  if (!j.is_object()) {
    return InvalidArgumentError(where + (line > 0 ? ":" + std::to_string(line) : "") +
                                ": expected a JSON object");
  }
  return j;
}

Status ReadRank(const json& entry, size_t index, const std::string& path, RunSummary::Rank* out) {
  const JsonFields f(entry, path, "ranks[" + std::to_string(index) + "]");
  SKRULL_ASSIGN_OR_RETURN(int64_t rank, f.RequiredInt("rank"));
  out->rank = static_cast<int>(rank);
  SKRULL_ASSIGN_OR_RETURN(int64_t exit_code, f.OptionalInt("exit_code", 0));
  out->exit_code = static_cast<int>(exit_code);
  SKRULL_ASSIGN_OR_RETURN(int64_t sig, f.OptionalInt("signal", 0));
  out->signal = static_cast<int>(sig);
  SKRULL_ASSIGN_OR_RETURN(const json* summary, f.OptionalObject("summary"));
  if (summary == nullptr) return OkStatus();
  out->has_summary = true;
  const JsonFields s = f.Nested("summary", *summary);
  SKRULL_ASSIGN_OR_RETURN(out->device, s.OptionalString("device"));
  SKRULL_ASSIGN_OR_RETURN(out->peak_memory_bytes, s.OptionalUint("peak_memory_bytes", 0));
  SKRULL_ASSIGN_OR_RETURN(out->bucket_size_tokens, s.OptionalInt("bucket_size_tokens", 0));
  return OkStatus();
}

// The job-level figures, present in both summary kinds.
Status ReadFigures(const JsonFields& f, RunSummary* s) {
  SKRULL_ASSIGN_OR_RETURN(s->job, f.OptionalString("job"));
  SKRULL_ASSIGN_OR_RETURN(s->steps, f.OptionalInt("steps", 0));
  SKRULL_ASSIGN_OR_RETURN(s->initial_loss, f.OptionalDouble("initial_loss", 0));
  SKRULL_ASSIGN_OR_RETURN(s->final_loss, f.OptionalDouble("final_loss", 0));
  SKRULL_ASSIGN_OR_RETURN(s->tokens_per_second, f.OptionalDouble("tokens_per_second", 0));
  SKRULL_ASSIGN_OR_RETURN(s->bucket_size_tokens, f.OptionalInt("bucket_size_tokens", 0));
  SKRULL_ASSIGN_OR_RETURN(s->peak_memory_bytes, f.OptionalUint("peak_memory_bytes", 0));
  return OkStatus();
}

bool ContainsIgnoringCase(const std::string& haystack, const char* needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle, needle + std::strlen(needle),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) ==
                                 std::tolower(static_cast<unsigned char>(b));
                        });
  return it != haystack.end();
}

// The line of `text` holding `needle` (case-insensitive), trimmed to 200 characters.
std::string LineContaining(const std::string& text, const char* needle) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (ContainsIgnoringCase(line, needle)) {
      if (line.size() > 200) line = line.substr(0, 197) + "...";
      return line;
    }
    start = end + 1;
  }
  return "";
}

// The files of `dir` named `rank0_name` (rank 0) or <prefix><r><suffix>
// (rank r), ascending rank.
std::vector<std::string> RankFiles(const std::string& dir, const std::string& rank0_name,
                                   const std::string& prefix, const std::string& suffix) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == rank0_name) {
      found.emplace_back(0, entry.path().string());
      continue;
    }
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    found.emplace_back(std::stoi(digits), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

// "rank 1: out of memory at step 3 on cuda:1 (<path>: <message>)".
std::string DescribeOutOfMemory(const RankOutOfMemory& oom) {
  return "rank " + std::to_string(oom.rank) + ": out of memory " +
         (oom.step >= 0 ? "at step " + std::to_string(oom.step) : std::string("while setting up")) +
         (oom.device.empty() ? "" : " on " + oom.device) + " (" + oom.path + ": " + oom.message +
         ")";
}

}  // namespace

StatusOr<RunSummary> ParseRunSummary(const std::string& text, const std::string& path) {
  SKRULL_ASSIGN_OR_RETURN(const json j, ParseObject(text, path));
  RunSummary s;
  s.path = path;
  const JsonFields f(j, path);
  SKRULL_RETURN_IF_ERROR(ReadFigures(f, &s));
  if (!j.contains("ranks")) {
    // A single-process run: the trainer's own summary, written when it ends.
    s.ok = true;
    RunSummary::Rank r;
    SKRULL_ASSIGN_OR_RETURN(int64_t rank, f.OptionalInt("rank", 0));
    r.rank = static_cast<int>(rank);
    r.has_summary = true;
    SKRULL_ASSIGN_OR_RETURN(r.device, f.OptionalString("device"));
    r.peak_memory_bytes = s.peak_memory_bytes;
    r.bucket_size_tokens = s.bucket_size_tokens;
    s.ranks.push_back(r);
    return s;
  }
  SKRULL_ASSIGN_OR_RETURN(s.ok, f.RequiredBool("ok"));
  SKRULL_ASSIGN_OR_RETURN(int64_t world, f.OptionalInt("world_size", 0));
  s.world_size = static_cast<int>(std::max<int64_t>(1, world));
  SKRULL_ASSIGN_OR_RETURN(int64_t ppn, f.OptionalInt("procs_per_node", 0));
  s.procs_per_node = static_cast<int>(std::max<int64_t>(1, ppn));
  SKRULL_ASSIGN_OR_RETURN(int64_t interrupted, f.OptionalInt("interrupted_by_signal", 0));
  s.interrupted_by_signal = static_cast<int>(interrupted);
  SKRULL_ASSIGN_OR_RETURN(s.wall_seconds, f.OptionalDouble("wall_seconds", 0));
  SKRULL_ASSIGN_OR_RETURN(const json* failure, f.OptionalObject("failure"));
  if (failure != nullptr) {
    const JsonFields ff = f.Nested("failure", *failure);
    RunSummary::Failure fail;
    SKRULL_ASSIGN_OR_RETURN(int64_t rank, ff.OptionalInt("rank", 0));
    fail.rank = static_cast<int>(rank);
    SKRULL_ASSIGN_OR_RETURN(int64_t exit_code, ff.OptionalInt("exit_code", 0));
    fail.exit_code = static_cast<int>(exit_code);
    SKRULL_ASSIGN_OR_RETURN(int64_t sig, ff.OptionalInt("signal", 0));
    fail.signal = static_cast<int>(sig);
    SKRULL_ASSIGN_OR_RETURN(fail.description, ff.OptionalString("description"));
    SKRULL_ASSIGN_OR_RETURN(fail.log, ff.OptionalString("log"));
    SKRULL_ASSIGN_OR_RETURN(fail.log_tail, ff.OptionalString("log_tail"));
    s.failure = fail;
  }
  SKRULL_ASSIGN_OR_RETURN(const json* ranks_array, f.RequiredArray("ranks"));
  const json& ranks = *ranks_array;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].is_object()) {
      return f.Error("ranks[" + std::to_string(i) + "]", "must be an object", &ranks[i]);
    }
    RunSummary::Rank r;
    SKRULL_RETURN_IF_ERROR(ReadRank(ranks[i], i, path, &r));
    s.ranks.push_back(r);
  }
  std::sort(s.ranks.begin(), s.ranks.end(),
            [](const RunSummary::Rank& a, const RunSummary::Rank& b) { return a.rank < b.rank; });
  return s;
}

StatusOr<RunSummary> ReadRunSummary(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFoundError(path +
                           ": no such file; the run did not start, or its launcher was killed "
                           "before writing it (see the launcher log next to it)");
    }
    return text.status();
  }
  return ParseRunSummary(*text, path);
}

StatusOr<std::vector<StepMemory>> ParseMetricsJsonl(const std::string& text,
                                                    const std::string& path,
                                                    bool* truncated_last_line) {
  if (truncated_last_line != nullptr) *truncated_last_line = false;
  std::vector<StepMemory> out;
  size_t start = 0;
  for (size_t line_no = 1; start < text.size(); ++line_no) {
    size_t end = text.find('\n', start);
    const bool has_newline = end != std::string::npos;
    if (!has_newline) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    StatusOr<json> parsed = ParseObject(line, path, line_no);
    if (!parsed.ok() && !has_newline) {  // torn by a killed writer
      if (truncated_last_line != nullptr) *truncated_last_line = true;
      break;
    }
    SKRULL_ASSIGN_OR_RETURN(const json j, std::move(parsed));
    const JsonFields f(j, where);
    SKRULL_ASSIGN_OR_RETURN(int64_t schema, f.RequiredInt("schema"));
    if (schema != 1) {
      return InvalidArgumentError(where + ": schema " + std::to_string(schema) +
                                  " is not supported (this controller reads schema 1); use a "
                                  "controller as new as the trainer");
    }
    StepMemory s;
    SKRULL_ASSIGN_OR_RETURN(int64_t rank, f.RequiredInt("rank"));
    s.rank = static_cast<int>(rank);
    SKRULL_ASSIGN_OR_RETURN(s.step, f.RequiredInt("step"));
    SKRULL_ASSIGN_OR_RETURN(uint64_t tokens, f.RequiredUint("rank_tokens_peak"));
    s.rank_tokens_peak = static_cast<int64_t>(tokens);
    SKRULL_ASSIGN_OR_RETURN(s.memory_peak_bytes, f.RequiredUint("memory_peak_bytes"));
    SKRULL_ASSIGN_OR_RETURN(s.memory_capacity_bytes, f.RequiredUint("memory_capacity_bytes"));
    SKRULL_ASSIGN_OR_RETURN(uint64_t bucket, f.RequiredUint("bucket_size_tokens"));
    s.bucket_size_tokens = static_cast<int64_t>(bucket);
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> MetricsFiles(const std::string& output_dir) {
  return RankFiles(output_dir, "metrics.jsonl", "metrics-rank", ".jsonl");
}

StatusOr<RankOutOfMemory> ParseOutOfMemoryRecord(const std::string& text, const std::string& path) {
  SKRULL_ASSIGN_OR_RETURN(const json j, ParseObject(text, path));
  const JsonFields f(j, path);
  SKRULL_ASSIGN_OR_RETURN(int64_t schema, f.RequiredInt("schema"));
  if (schema != metrics::kOomRecordSchema) {
    return InvalidArgumentError(path + ": schema " + std::to_string(schema) +
                                " is not supported (this controller reads schema " +
                                std::to_string(metrics::kOomRecordSchema) +
                                "); use a controller as new as the trainer");
  }
  RankOutOfMemory oom;
  oom.path = path;
  SKRULL_ASSIGN_OR_RETURN(int64_t rank, f.RequiredInt("rank", 0, INT32_MAX));
  oom.rank = static_cast<int>(rank);
  SKRULL_ASSIGN_OR_RETURN(oom.step, f.RequiredInt("step", -1));
  SKRULL_ASSIGN_OR_RETURN(oom.device, f.OptionalString("device"));
  SKRULL_ASSIGN_OR_RETURN(oom.bucket_size_tokens, f.OptionalInt("bucket_size_tokens", 0, 0));
  SKRULL_ASSIGN_OR_RETURN(oom.message, f.OptionalString("message"));
  return oom;
}

StatusOr<std::vector<RankOutOfMemory>> ReadOutOfMemoryRecords(const std::string& output_dir) {
  std::vector<RankOutOfMemory> out;
  for (const std::string& file :
       RankFiles(output_dir, metrics::OomRecordFileName(0), "oom-rank", ".json")) {
    SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
    SKRULL_ASSIGN_OR_RETURN(RankOutOfMemory oom, ParseOutOfMemoryRecord(text, file));
    out.push_back(std::move(oom));
  }
  return out;
}

std::string MemoryFailureEvidence(int signal, const std::string& log_tail) {
  if (signal == SIGKILL) {
    return "signal 9 (Killed), which is what the kernel's OOM killer sends";
  }
  for (const char* needle :
       {"out of memory", "OutOfMemory", "bad_alloc", "Cannot allocate memory"}) {
    const std::string line = LineContaining(log_tail, needle);
    if (!line.empty()) return "log: " + line;
  }
  return "";
}

StatusOr<TuningInput> ReadRunDirectory(const std::string& output_dir,
                                       const RunDirOptions& options) {
  const std::string summary_path = (fs::path(output_dir) / "summary.json").string();
  StatusOr<RunSummary> summary = ReadRunSummary(summary_path);
  if (!summary.ok() && summary.status().code() != StatusCode::kNotFound) return summary.status();
  const std::vector<std::string> files = MetricsFiles(output_dir);
  SKRULL_ASSIGN_OR_RETURN(const std::vector<RankOutOfMemory> ooms,
                          ReadOutOfMemoryRecords(output_dir));
  if (!summary.ok() && files.empty() && ooms.empty()) {
    return NotFoundError(output_dir +
                         ": no summary.json and no metrics.jsonl; is this a skrull-trainer "
                         "output directory (spec.training.outputDir) of a run that started?");
  }

  TuningInput input;
  input.source = output_dir;
  std::map<int, RankObservation> ranks;
  std::map<int, uint64_t> capacity;
  int64_t last_bucket = 0;
  for (const std::string& file : files) {
    SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
    SKRULL_ASSIGN_OR_RETURN(std::vector<StepMemory> steps, ParseMetricsJsonl(text, file));
    for (const StepMemory& s : steps) {
      RankObservation& r = ranks[s.rank];
      r.rank = s.rank;
      r.steps.push_back({s.rank_tokens_peak, s.memory_peak_bytes});
      capacity[s.rank] = std::max(capacity[s.rank], s.memory_capacity_bytes);
      last_bucket = s.bucket_size_tokens;
    }
  }

  int procs_per_node = static_cast<int>(std::max<size_t>(1, ranks.size()));
  std::map<int, std::string> device;
  if (summary.ok()) {
    procs_per_node = summary->procs_per_node;
    for (const RunSummary::Rank& r : summary->ranks) device[r.rank] = r.device;
    input.bucket_size_tokens = summary->bucket_size_tokens;
    if (summary->failure) {
      const RunSummary::Failure& f = *summary->failure;
      const std::string evidence = MemoryFailureEvidence(f.signal, f.log_tail);
      input.died_of_memory = !evidence.empty();
      input.failure = "rank " + std::to_string(f.rank) + ": " + f.description +
                      (evidence.empty() ? "" : "; " + evidence);
    }
  }
  // The trainer's own word that it ran out of memory, with where and how.
  for (const RankOutOfMemory& oom : ooms) {
    input.died_of_memory = true;
    if (input.bucket_size_tokens <= 0) input.bucket_size_tokens = oom.bucket_size_tokens;
    if (device[oom.rank].empty()) device[oom.rank] = oom.device;
  }
  if (!ooms.empty()) {
    const std::string what =
        DescribeOutOfMemory(ooms.front()) +
        (ooms.size() > 1 ? " and " + std::to_string(ooms.size() - 1) + " more rank(s)" : "");
    input.failure = input.failure.empty() ? what : input.failure + "; " + what;
  }
  if (options.procs_per_node > 0) procs_per_node = options.procs_per_node;
  // The steps say what was in force when the summary has no figures (a
  // failed run) or there is no summary (a killed launcher).
  if (input.bucket_size_tokens <= 0) input.bucket_size_tokens = last_bucket;

  // Ranks without a summary (they failed or were stopped) ran on the same
  // kind of device as those with one.
  std::string job_device;
  for (const auto& [rank, dev] : device) {
    if (!dev.empty()) job_device = dev;
  }
  for (auto& [rank, obs] : ranks) {
    uint64_t cap = capacity[rank];
    const auto it = device.find(rank);
    const std::string dev = it != device.end() && !it->second.empty() ? it->second : job_device;
    const bool host_memory = dev.empty() || dev == "cpu";
    if (cap > 0 && host_memory && procs_per_node > 1) {
      obs.capacity_note = "host memory " + FormatBytes(static_cast<double>(cap)) + " shared by " +
                          std::to_string(procs_per_node) + " ranks";
      cap /= static_cast<uint64_t>(procs_per_node);
    }
    obs.capacity_bytes = cap;
    input.ranks.push_back(std::move(obs));
  }
  return input;
}

StatusOr<TuningInput> ReadRunDirectoryForJob(const std::string& output_dir,
                                             const api::JobSpec& job) {
  RunDirOptions options;
  options.procs_per_node = job.parallelism.procs_per_node;
  SKRULL_ASSIGN_OR_RETURN(TuningInput input, ReadRunDirectory(output_dir, options));
  const std::string& profile = job.scheduler.hardware_profile;
  std::optional<uint64_t> profile_capacity;  // read once, when a rank needs it
  for (RankObservation& r : input.ranks) {
    if (r.capacity_bytes > 0 || r.steps.empty() || profile.empty()) continue;
    if (!profile_capacity) {
      StatusOr<uint64_t> cap = ReadProfileCapacityBytes(profile);
      if (!cap.ok()) {
        return cap.status().WithContext(
            "rank " + std::to_string(r.rank) +
            " reported no memory capacity, so the tuner needs spec.scheduler.hardwareProfile's");
      }
      profile_capacity = *cap;
    }
    r.capacity_bytes = *profile_capacity;
    r.capacity_note = "capacity from " + profile;
  }
  return input;
}

StatusOr<TuningDecision> TuneRunDirectory(const std::string& output_dir, const api::JobSpec& job,
                                          const TunerOptions& options) {
  SKRULL_ASSIGN_OR_RETURN(TuningInput input, ReadRunDirectoryForJob(output_dir, job));
  return Tune(input, job.tuning, options);
}

StatusOr<uint64_t> ReadProfileCapacityBytes(const std::string& profile_path) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(profile_path));
  SKRULL_ASSIGN_OR_RETURN(const json j, ParseObject(text, profile_path));
  const JsonFields f(j, profile_path);
  SKRULL_ASSIGN_OR_RETURN(const json* memory, f.OptionalObject("memory"));
  if (memory == nullptr) {
    return f.Error("memory",
                   "required for the memory capacity; a shipped profile has none: measure one "
                   "with `skrull-trainer --profile --job FILE --out profile.json`");
  }
  SKRULL_ASSIGN_OR_RETURN(uint64_t cap,
                          f.Nested("memory", *memory).RequiredUint("capacity_bytes", 1));
  return cap;
}

}  // namespace skrull::tuner
