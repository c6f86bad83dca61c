// Builders and helpers shared by the controller/kube tests.
#ifndef SKRULL_TESTS_CONTROLLER_KUBE_KUBE_TEST_UTIL_H_
#define SKRULL_TESTS_CONTROLLER_KUBE_KUBE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "controller/kube/kube_api.h"
#include "tests/test_temp_dir.h"

namespace skrull::kube::testing {

inline const Resource kPods = PodsResource();
inline const Resource kJobs = SkrullJobsResource();
inline const Resource kConfigMaps = ConfigMapsResource();

// Watch from `rv` ("" = the current state first) with a 5 s server timeout.
inline WatchOptions WatchFrom(const std::string& rv, const std::string& selector = "") {
  WatchOptions o;
  o.resource_version = rv;
  o.label_selector = selector;
  o.timeout = std::chrono::seconds(5);
  return o;
}

// A minimal pod with `labels` and one container.
inline json PodObject(const std::string& name,
                      const std::map<std::string, std::string>& labels = {}) {
  json pod = {{"metadata", {{"name", name}}},
              {"spec", {{"containers", {{{"name", "trainer"}, {"image", "skrull:test"}}}}}}};
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  return pod;
}

inline json ConfigMapObject(const std::string& name, const std::string& value = "v") {
  return {{"metadata", {{"name", name}}}, {"data", {{"key", value}}}};
}

inline json SkrullJobObject(const std::string& name, int replicas = 2) {
  return {{"metadata", {{"name", name}}}, {"spec", {{"replicas", replicas}}}};
}

// `child` with an ownerReference to `owner` (as stored: uid, kind, ...).
inline json OwnedBy(json child, const json& owner, bool controller = true) {
  child["metadata"]["ownerReferences"].push_back({{"apiVersion", owner["apiVersion"]},
                                                  {"kind", owner["kind"]},
                                                  {"name", owner["metadata"]["name"]},
                                                  {"uid", owner["metadata"]["uid"]},
                                                  {"controller", controller},
                                                  {"blockOwnerDeletion", true}});
  return child;
}

inline std::string Rv(const json& object) {
  return object["metadata"]["resourceVersion"].get<std::string>();
}

// A fresh empty directory named after the running test.
inline std::string TempDir() { return ::skrull::testing_util::TestTempDir("kube"); }

// "ADDED a", "DELETED b", ... for the non-bookmark events.
inline std::vector<std::string> Describe(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const WatchEvent& e : events) {
    if (e.type == WatchEvent::Type::kBookmark) continue;
    out.push_back(std::string(WatchEventTypeName(e.type)) + " " +
                  e.object["metadata"]["name"].get<std::string>());
  }
  return out;
}

}  // namespace skrull::kube::testing

#endif  // SKRULL_TESTS_CONTROLLER_KUBE_KUBE_TEST_UTIL_H_
