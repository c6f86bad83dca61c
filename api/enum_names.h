// Private to api/: the YAML spelling of every enum, in one table each, shared
// by the parser, the serializer and the public *Name functions.
#ifndef SKRULL_API_ENUM_NAMES_H_
#define SKRULL_API_ENUM_NAMES_H_

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::api {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

constexpr EnumName<scheduler::Policy> JobPolicyEntry(scheduler::Policy p) {
  return {p, scheduler::PolicyName(p)};
}
// kJobPolicies with the scheduler's names.
inline constexpr EnumName<scheduler::Policy> kSchedulerPolicyNames[] = {
    JobPolicyEntry(kJobPolicies[0]), JobPolicyEntry(kJobPolicies[1]),
    JobPolicyEntry(kJobPolicies[2]), JobPolicyEntry(kJobPolicies[3]),
    JobPolicyEntry(kJobPolicies[4]), JobPolicyEntry(kJobPolicies[5]),
    JobPolicyEntry(kJobPolicies[6]), JobPolicyEntry(kJobPolicies[7]),
};
static_assert(std::size(kSchedulerPolicyNames) == std::size(kJobPolicies));
inline constexpr EnumName<DataFormat> kDataFormatNames[] = {
    {DataFormat::kTokenizedJsonl, "tokenized-jsonl"},
    {DataFormat::kTextJsonl, "text-jsonl"},
    {DataFormat::kAlpaca, "alpaca"},
    {DataFormat::kShareGpt, "sharegpt"},
};
inline constexpr EnumName<OverLengthPolicy> kOverLengthPolicyNames[] = {
    {OverLengthPolicy::kError, "error"},
    {OverLengthPolicy::kTruncate, "truncate"},
    {OverLengthPolicy::kSkip, "skip"},
};
inline constexpr EnumName<MalformedPolicy> kMalformedPolicyNames[] = {
    {MalformedPolicy::kError, "error"},
    {MalformedPolicy::kSkip, "skip"},
};
inline constexpr EnumName<LrSchedule> kLrScheduleNames[] = {
    {LrSchedule::kCosine, "cosine"},
    {LrSchedule::kLinear, "linear"},
    {LrSchedule::kConstant, "constant"},
};
inline constexpr EnumName<Precision> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"},
    {Precision::kBf16, "bf16"},
};
inline constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::kNone, "none"},
    {Recompute::kSelective, "selective"},
    {Recompute::kFull, "full"},
};
inline constexpr EnumName<GradReduceDtype> kGradReduceDtypeNames[] = {
    {GradReduceDtype::kFp32, "fp32"},
    {GradReduceDtype::kBf16, "bf16"},
};

inline constexpr EnumName<CleanPodPolicy> kCleanPodPolicyNames[] = {
    {CleanPodPolicy::kNone, "None"},
    {CleanPodPolicy::kRunning, "Running"},
    {CleanPodPolicy::kAll, "All"},
};

// spec.image.pullPolicy is a string (Kubernetes' spelling); these are its values.
inline constexpr const char* kPullPolicies[] = {"Always", "IfNotPresent", "Never"};

// REQUIRES: `value` is in `table` (every enumerator is).
template <typename E, size_t N>
const char* NameOf(const EnumName<E> (&table)[N], E value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  SKRULL_CHECK(false) << "enum value " << static_cast<int>(value) << " has no YAML name";
  return "";
}

template <typename E, size_t N>
std::vector<std::string> NamesOf(const EnumName<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.name);
  return names;
}

template <size_t N>
std::vector<std::string> NamesOf(const char* const (&table)[N]) {
  return std::vector<std::string>(std::begin(table), std::end(table));
}

}  // namespace skrull::api

#endif  // SKRULL_API_ENUM_NAMES_H_
