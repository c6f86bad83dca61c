// Test builders for SkrullJob documents.
#ifndef SKRULL_TESTS_API_JOB_BUILDER_H_
#define SKRULL_TESTS_API_JOB_BUILDER_H_

#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::api::testing {

// The smallest valid job; every other field takes its default.
inline constexpr char kMinimalJob[] = R"(apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata:
  name: test-job
spec:
  model:
    config: models/tiny/config.json
  data:
    path: data/train.jsonl
)";

// A job document edited field by field:
//   JobYaml().Set("spec.training.steps", "ten").Text()
// Values are YAML text, so "ten" is a string, "{rank: 0}" a mapping, "~" null.
class JobYaml {
 public:
  JobYaml() : doc_(YAML::Load(kMinimalJob)) {}
  explicit JobYaml(const std::string& text) : doc_(YAML::Load(text)) {}

  JobYaml& Set(const std::string& path, const std::string& value_yaml) {
    YAML::Node parent = Parent(path);
    parent[Last(path)] = YAML::Load(value_yaml);
    return *this;
  }
  JobYaml& Remove(const std::string& path) {
    YAML::Node parent = Parent(path);
    parent.remove(Last(path));
    return *this;
  }
  std::string Text() const {
    YAML::Emitter out;
    out << doc_;
    return std::string(out.c_str()) + "\n";
  }

 private:
  static std::vector<std::string> Split(const std::string& path) {
    std::vector<std::string> parts;
    std::stringstream ss(path);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    return parts;
  }
  static std::string Last(const std::string& path) { return Split(path).back(); }
  YAML::Node Parent(const std::string& path) {
    std::vector<std::string> parts = Split(path);
    YAML::Node node = doc_;
    for (size_t i = 0; i + 1 < parts.size(); ++i) node.reset(node[parts[i]]);
    return node;
  }

  YAML::Node doc_;
};

// The error lines of a failed load without their "<origin>:<line>:<column>: "
// prefix: "spec.training.steps: expected an integer, got 'ten'".
inline std::vector<std::string> ErrorLines(const Status& status) {
  std::vector<std::string> lines;
  std::stringstream ss(status.message());
  for (std::string line; std::getline(ss, line);) {
    // Skip "<origin>" and an optional ":<line>:<column>", up to ": ".
    size_t start = line.find(": ");
    lines.push_back(start == std::string::npos ? line : line.substr(start + 2));
  }
  return lines;
}

// Loads `text` (origin "<test>") and returns its error lines; empty when it loads.
inline std::vector<std::string> LoadErrors(const std::string& text) {
  StatusOr<JobSpec> spec = LoadJobSpec(text, "<test>");
  if (spec.ok()) return {};
  return ErrorLines(spec.status());
}

}  // namespace skrull::api::testing

#endif  // SKRULL_TESTS_API_JOB_BUILDER_H_
