#include "trainer/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "common/json_fields.h"

namespace skrull::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kTrainerStateSchema = 1;

// NaN/inf are not JSON; store them as null (read back as NaN).
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

bool IsCompleteCheckpoint(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::is_regular_file(dir / kTrainerStateFile, ec);
}

// Step of a folder named exactly "step-<digits>", or -1.
int64_t StepOfName(const std::string& name) {
  static const std::regex kPattern("step-([0-9]{1,18})");
  std::smatch m;
  if (!std::regex_match(name, m, kPattern)) return -1;
  return std::stoll(m[1].str());
}

// The complete step-<N> folders under `root`, by ascending step.
std::vector<std::pair<int64_t, fs::path>> CompleteCheckpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    const int64_t step = StepOfName(e.path().filename().string());
    if (step >= 0 && IsCompleteCheckpoint(e.path())) out.emplace_back(step, e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The folder name `latest` holds, or "".
std::string LatestName(const fs::path& root) {
  StatusOr<std::string> latest = ReadFileToString((root / kLatestFile).string());
  if (!latest.ok()) return "";
  std::string name = *latest;
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  return name;
}

}  // namespace

std::string TrainerStateToJson(const TrainerState& s) {
  json j;
  j["schema"] = kTrainerStateSchema;
  j["step"] = s.step;
  j["sampler_seed"] = s.sampler_seed;
  j["data_position"] = s.data_position;
  if (!s.source_cursors.empty()) j["source_cursors"] = s.source_cursors;
  if (s.best_eval_step >= 0) {
    j["eval"] = {{"last_loss", Number(s.last_eval_loss)},
                 {"best_loss", Number(s.best_eval_loss)},
                 {"best_step", s.best_eval_step}};
  }
  j["rng_state_hex"] = s.rng_state_hex;
  json losses = json::array();
  for (double l : s.loss_history) losses.push_back(Number(l));
  j["loss_history"] = losses;
  j["loss_history_first_step"] = s.loss_history_first_step;
  j["job_spec_hash"] = s.job_spec_hash;
  j["initial_loss"] = Number(s.initial_loss);
  j["tokens"] = s.tokens;
  j["train_seconds"] = s.train_seconds;
  j["rollbacks"] = {{"dacp", s.rollbacks_dacp}, {"gds", s.rollbacks_gds}};
  return j.dump(2) + "\n";
}

StatusOr<TrainerState> ParseTrainerStateJson(const std::string& text, const std::string& origin) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(origin +
                                ": not a JSON object; the checkpoint is damaged (resume "
                                "from an earlier step-<N> folder)");
  }
  const JsonFields f(j, origin);
  SKRULL_ASSIGN_OR_RETURN(const int64_t schema, f.RequiredInt("schema"));
  if (schema != kTrainerStateSchema) {
    return f.Error("schema",
                   "is not supported (expected " + std::to_string(kTrainerStateSchema) + ")",
                   &j.at("schema"));
  }
  // Losses: NaN was written as null and reads back as NaN.
  auto loss = [](const json& v) -> StatusOr<double> {
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) return InvalidArgumentError("must be a number or null");
    return v.get<double>();
  };
  TrainerState s;
  SKRULL_ASSIGN_OR_RETURN(s.step, f.RequiredInt("step", 0));
  SKRULL_ASSIGN_OR_RETURN(s.sampler_seed, f.RequiredUint("sampler_seed"));
  SKRULL_ASSIGN_OR_RETURN(s.data_position, f.RequiredInt("data_position"));
  SKRULL_ASSIGN_OR_RETURN(const json* cursors, f.OptionalArray("source_cursors"));
  for (size_t i = 0; cursors != nullptr && i < cursors->size(); ++i) {
    const json& c = (*cursors)[i];
    if (!c.is_number_integer() || c.get<int64_t>() < 0) {
      return f.Error("source_cursors[" + std::to_string(i) + "]", "must be an integer >= 0", &c);
    }
    s.source_cursors.push_back(c.get<int64_t>());
  }
  SKRULL_ASSIGN_OR_RETURN(const json* eval, f.OptionalObject("eval"));
  if (eval != nullptr) {
    const JsonFields ef = f.Nested("eval", *eval);
    SKRULL_ASSIGN_OR_RETURN(s.best_eval_step, ef.RequiredInt("best_step", 0));
    SKRULL_ASSIGN_OR_RETURN(s.best_eval_loss, ef.RequiredDouble("best_loss"));
    SKRULL_ASSIGN_OR_RETURN(s.last_eval_loss, ef.RequiredDouble("last_loss"));
  }
  SKRULL_ASSIGN_OR_RETURN(s.rng_state_hex, f.RequiredString("rng_state_hex"));
  SKRULL_ASSIGN_OR_RETURN(const json* history, f.RequiredArray("loss_history"));
  for (size_t i = 0; i < history->size(); ++i) {
    StatusOr<double> l = loss((*history)[i]);
    if (!l.ok()) {
      return f.Error("loss_history[" + std::to_string(i) + "]", l.status().message(),
                     &(*history)[i]);
    }
    s.loss_history.push_back(*l);
  }
  SKRULL_ASSIGN_OR_RETURN(s.loss_history_first_step, f.RequiredInt("loss_history_first_step"));
  SKRULL_ASSIGN_OR_RETURN(s.job_spec_hash, f.RequiredString("job_spec_hash"));
  if (f.IsNull("initial_loss")) {
    s.initial_loss = std::numeric_limits<double>::quiet_NaN();
  } else {
    SKRULL_ASSIGN_OR_RETURN(s.initial_loss, f.RequiredDouble("initial_loss"));
  }
  SKRULL_ASSIGN_OR_RETURN(s.tokens, f.RequiredInt("tokens"));
  SKRULL_ASSIGN_OR_RETURN(s.train_seconds, f.RequiredDouble("train_seconds"));
  SKRULL_ASSIGN_OR_RETURN(const json* rollbacks, f.RequiredObject("rollbacks"));
  const JsonFields rf = f.Nested("rollbacks", *rollbacks);
  SKRULL_ASSIGN_OR_RETURN(s.rollbacks_dacp, rf.RequiredInt("dacp"));
  SKRULL_ASSIGN_OR_RETURN(s.rollbacks_gds, rf.RequiredInt("gds"));
  return s;
}

std::string CheckpointsRoot(const std::string& output_dir) {
  return (fs::path(output_dir) / "checkpoints").string();
}

std::string CheckpointDir(const std::string& output_dir, int64_t step) {
  return (fs::path(CheckpointsRoot(output_dir)) / ("step-" + std::to_string(step))).string();
}

StatusOr<std::string> CommitCheckpoint(
    const std::string& output_dir, int64_t step,
    const std::function<Status(const std::string& tmp_dir)>& write_files) {
  const fs::path root = CheckpointsRoot(output_dir);
  const fs::path final_dir = CheckpointDir(output_dir, step);
  const fs::path tmp_dir = final_dir.string() + ".tmp";
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return IoError(root.string() + ": cannot create directory: " + ec.message());
  fs::remove_all(tmp_dir, ec);  // a leftover from a crash
  if (ec) return IoError(tmp_dir.string() + ": cannot remove leftover: " + ec.message());
  fs::create_directory(tmp_dir, ec);
  if (ec) return IoError(tmp_dir.string() + ": cannot create directory: " + ec.message());

  if (Status written = write_files(tmp_dir.string()); !written.ok()) {
    fs::remove_all(tmp_dir, ec);
    return written;
  }
  if (!fs::is_regular_file(tmp_dir / kTrainerStateFile, ec)) {
    return InternalError(tmp_dir.string() + ": checkpoint writer did not write " +
                         kTrainerStateFile);
  }
  for (const fs::directory_entry& e : fs::directory_iterator(tmp_dir, ec)) {
    if (e.is_regular_file()) SKRULL_RETURN_IF_ERROR(FsyncPath(e.path().string()));
  }
  SKRULL_RETURN_IF_ERROR(FsyncPath(tmp_dir.string()));

  // A folder of this step already exists only when a run re-does a step
  // (e.g. resumed from an earlier checkpoint): move it aside first, so a crash
  // leaves one of the two complete.
  fs::path old_dir;
  if (fs::exists(final_dir, ec)) {
    old_dir = final_dir.string() + ".old";
    fs::remove_all(old_dir, ec);
    fs::rename(final_dir, old_dir, ec);
    if (ec) return IoError(final_dir.string() + ": cannot move aside: " + ec.message());
  }
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) {
    return IoError(tmp_dir.string() + ": rename to " + final_dir.string() +
                   " failed: " + ec.message());
  }
  SKRULL_RETURN_IF_ERROR(FsyncPath(root.string()));
  SKRULL_RETURN_IF_ERROR(
      WriteFileAtomically((root / kLatestFile).string(), final_dir.filename().string() + "\n"));
  if (!old_dir.empty()) fs::remove_all(old_dir, ec);
  return final_dir.string();
}

StatusOr<std::optional<std::string>> ResolveResumeDir(const std::string& output_dir,
                                                      const std::string& resume_from) {
  if (resume_from.empty()) return std::optional<std::string>();
  std::error_code ec;
  if (resume_from != "latest") {
    const fs::path dir(resume_from);
    if (!fs::exists(dir, ec)) {
      return NotFoundError("spec.training.resumeFrom: " + resume_from +
                           ": no such checkpoint folder; use \"latest\" or a step-<N> folder "
                           "under " +
                           CheckpointsRoot(output_dir));
    }
    if (!IsCompleteCheckpoint(dir)) {
      return InvalidArgumentError("spec.training.resumeFrom: " + resume_from +
                                  ": not a complete checkpoint (no " + kTrainerStateFile +
                                  "); point it at a step-<N> folder");
    }
    return std::optional<std::string>(dir.string());
  }
  const fs::path root = CheckpointsRoot(output_dir);
  const std::string name = LatestName(root);
  if (StepOfName(name) >= 0 && IsCompleteCheckpoint(root / name)) {
    return std::optional<std::string>((root / name).string());
  }
  // `latest` is missing or stale: the newest complete step-<N> folder.
  const auto complete = CompleteCheckpoints(root);
  if (complete.empty()) return std::optional<std::string>();
  return std::optional<std::string>(complete.back().second.string());
}

StatusOr<std::vector<std::string>> PruneCheckpoints(const std::string& output_dir,
                                                    int64_t keep_last) {
  std::vector<std::string> removed;
  if (keep_last <= 0) return removed;
  const fs::path root = CheckpointsRoot(output_dir);
  const auto complete = CompleteCheckpoints(root);
  const std::string latest = LatestName(root);
  const size_t keep = static_cast<size_t>(keep_last);
  for (size_t i = 0; i + keep < complete.size(); ++i) {
    // The newest complete one is among the kept; `latest`'s target is spared
    // even when it is older (a resumed run that wrote an older step).
    if (complete[i].second.filename().string() == latest) continue;
    std::error_code ec;
    fs::remove_all(complete[i].second, ec);
    if (ec) {
      return IoError(complete[i].second.string() +
                     ": cannot delete (spec.checkpoint.keepLast): " + ec.message());
    }
    removed.push_back(complete[i].second.string());
  }
  return removed;
}

StatusOr<TrainerState> ReadTrainerState(const std::string& dir) {
  const std::string path = (fs::path(dir) / kTrainerStateFile).string();
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseTrainerStateJson(text, path);
}

}  // namespace skrull::train
