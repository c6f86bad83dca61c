// The scheduling policies: the one enum the job spec (api/, spec.scheduler.
// policy) and the scheduler (policy.h) share, with their names. Header-only
// and dependency-free, so api/ uses it without linking skrull_scheduler.
// What each policy does: policy.h.
#ifndef SKRULL_SCHEDULER_POLICY_NAME_H_
#define SKRULL_SCHEDULER_POLICY_NAME_H_

namespace skrull::scheduler {

enum class Policy {
  kSkrull,
  kCpAll,
  kSorted,
  kBalancedCp,
  kRoundRobin,
  kSkrullPaper,
  kDeepSpeed,
  kDynamicCp,
  kLocalIfFits
};

// "skrull", "cp-all", "sorted", "balanced-cp", "round-robin", "skrull-paper",
// "deepspeed", "dynamic-cp", "local-if-fits"
// (the spelling of spec.scheduler.policy and of --policy).
constexpr const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kSkrull:
      return "skrull";
    case Policy::kCpAll:
      return "cp-all";
    case Policy::kSorted:
      return "sorted";
    case Policy::kBalancedCp:
      return "balanced-cp";
    case Policy::kRoundRobin:
      return "round-robin";
    case Policy::kSkrullPaper:
      return "skrull-paper";
    case Policy::kDeepSpeed:
      return "deepspeed";
    case Policy::kDynamicCp:
      return "dynamic-cp";
    case Policy::kLocalIfFits:
      return "local-if-fits";
  }
  return "?";
}

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_POLICY_NAME_H_
