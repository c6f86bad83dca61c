#include "trainer/train/train_summary.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

namespace skrull::train {

using nlohmann::json;

namespace {
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

std::string SummaryToJson(const TrainSummary& s) {
  json j;
  j["job"] = s.job;
  j["steps"] = s.steps;
  j["first_step"] = s.first_step;
  j["initial_loss"] = Number(s.initial_loss);
  j["final_loss"] = Number(s.final_loss);
  j["tokens"] = s.tokens;
  j["mean_iteration_seconds"] = Number(s.mean_iteration_seconds);
  j["tokens_per_second"] = Number(s.tokens_per_second);
  j["policy"] = s.policy;
  j["hardware_profile"] = s.hardware_profile;
  j["bucket_size_tokens"] = s.bucket_size_tokens;
  j["dp"] = s.dp;
  j["cp"] = s.cp;
  j["rank"] = s.rank;
  j["world_size"] = s.world_size;
  j["device"] = s.device;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  j["peak_memory_allocated_bytes"] = s.peak_memory_allocated_bytes;
  j["zero_stage"] = s.zero_stage;
  j["static_memory_bytes"] = s.static_memory_bytes;
  j["rollbacks"] = {{"dacp", s.rollbacks.dacp}, {"gds", s.rollbacks.gds}};
  j["phase_seconds"] = {{"compute", Number(s.phase_seconds.compute)},
                        {"cp_comm_wait", Number(s.phase_seconds.cp_comm_wait)},
                        {"dp_comm_wait", Number(s.phase_seconds.dp_comm_wait)},
                        {"idle", Number(s.phase_seconds.idle)}};
  j["resumed_from"] = s.resumed_from;
  j["last_checkpoint"] = s.last_checkpoint;
  j["stopped_early"] = s.stopped_early;
  json losses = json::array(), lrs = json::array(), evals = json::array();
  for (const StepStats& h : s.history) {
    losses.push_back(Number(h.loss));
    lrs.push_back(Number(h.lr));
    if (std::isfinite(h.eval_loss)) evals.push_back({{"step", h.step + 1}, {"loss", h.eval_loss}});
  }
  j["losses"] = losses;
  j["learning_rates"] = lrs;
  if (s.best_eval_step >= 0) {  // spec.data.eval
    j["eval_loss"] = Number(s.eval_loss);
    j["best_eval_loss"] = Number(s.best_eval_loss);
    j["best_eval_step"] = s.best_eval_step;
    j["eval_losses"] = evals;
  }
  return j.dump(2) + "\n";
}

std::string FormatCount(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  if (v >= 1e6) {
    s << v / 1e6 << "M";
  } else if (v >= 1e4) {
    s << v / 1e3 << "k";
  } else {
    s << std::setprecision(0) << v;
  }
  return s.str();
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  }
  return buf;
}

std::string ProgressLine(const StepStats& stats, int64_t total, double seconds, double tokens,
                         int64_t steps_run) {
  const int64_t done = stats.step + 1;
  const double mean = steps_run > 0 ? seconds / static_cast<double>(steps_run) : 0;
  std::ostringstream line;
  line << "step " << done << "/" << total << " loss " << std::fixed << std::setprecision(4)
       << stats.loss << " lr " << std::scientific << std::setprecision(2) << stats.lr
       << " grad_norm " << std::fixed << std::setprecision(3) << stats.grad_norm << " tokens/s "
       << FormatCount(seconds > 0 ? tokens / seconds : 0) << " step " << std::setprecision(2)
       << stats.seconds << "s eta " << FormatDuration(mean * static_cast<double>(total - done));
  if (std::isfinite(stats.eval_loss)) {
    line << " eval_loss " << std::setprecision(4) << stats.eval_loss;
  }
  return line.str();
}

}  // namespace skrull::train
