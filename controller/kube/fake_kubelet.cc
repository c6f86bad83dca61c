#include "controller/kube/fake_kubelet.h"

#include "controller/kube/object_rules.h"

namespace skrull::kube {

StatusOr<json> SetPodPhase(KubeApi& api, const std::string& ns, const std::string& name,
                           const std::string& phase, const std::string& reason, int exit_code) {
  json state;
  bool ready = false;
  if (phase == "Pending") {
    state = {{"waiting", {{"reason", reason.empty() ? "ContainerCreating" : reason}}}};
  } else if (phase == "Running") {
    state = {{"running", {{"startedAt", "2025-01-01T00:00:00Z"}}}};
    ready = true;
  } else if (phase == "Succeeded") {
    state = {{"terminated", {{"exitCode", 0}, {"reason", reason.empty() ? "Completed" : reason}}}};
  } else if (phase == "Failed") {
    state = {{"terminated",
              {{"exitCode", exit_code == 0 ? 1 : exit_code},
               {"reason", reason.empty() ? "Error" : reason}}}};
  } else {
    return InvalidArgumentError(
        "SetPodPhase: phase must be Pending, Running, Succeeded or "
        "Failed (got \"" +
        phase + "\")");
  }
  SKRULL_ASSIGN_OR_RETURN(json pod, api.Get(PodsResource(), ns, name));
  json statuses = json::array();
  const json& containers = pod["spec"]["containers"];
  if (containers.is_array()) {
    for (const json& c : containers) {
      statuses.push_back({{"name", StringField(c, "name")},
                          {"image", StringField(c, "image")},
                          {"ready", ready},
                          {"restartCount", 0},
                          {"state", state}});
    }
  }
  json status = {{"phase", phase}, {"containerStatuses", statuses}};
  if (phase == "Running") status["podIP"] = "10.0.0.1";
  return api.Patch(PodsResource(), ns, name, PatchType::kMerge, {{"status", status}},
                   /*status_subresource=*/true);
}

}  // namespace skrull::kube
