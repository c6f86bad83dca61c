// LabelSelector: the Kubernetes label selector string syntax, for the
// in-memory API server and for matching objects in a local cache.
//
//   a=b, a==b    label a is b
//   a!=b         label a is not b (or a is missing)
//   a in (x,y)   label a is x or y
//   a notin (x)  label a is not x (or a is missing)
//   a            label a exists
//   !a           label a does not exist
// Requirements are comma-joined and all must hold; "" matches everything.
//
// Thread safety: an immutable value once parsed.
#ifndef SKRULL_CONTROLLER_KUBE_LABEL_SELECTOR_H_
#define SKRULL_CONTROLLER_KUBE_LABEL_SELECTOR_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace skrull::kube {

class LabelSelector {
 public:
  // InvalidArgument naming the requirement that does not parse and why,
  // e.g. `label selector "a in (x": requirement "a in (x": missing ")"`.
  static StatusOr<LabelSelector> Parse(const std::string& selector);

  // True when `labels` (an object of string values; null = no labels)
  // satisfies every requirement.
  bool Matches(const nlohmann::json& labels) const;
  // Matches(object.metadata.labels).
  bool MatchesObject(const nlohmann::json& object) const;

  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;
  };
  static StatusOr<Requirement> ParseRequirement(const std::string& text);

  std::vector<Requirement> requirements_;
};

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_LABEL_SELECTOR_H_
