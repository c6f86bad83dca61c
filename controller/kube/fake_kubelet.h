// Test-side kubelet: moves a pod through its phases as a kubelet would,
// writing the pod's /status through any KubeApi (a MemoryKubeApi, or an
// HttpKubeApi against FakeApiServer). Test support only
// (library skrull_kube_testing).
#ifndef SKRULL_CONTROLLER_KUBE_FAKE_KUBELET_H_
#define SKRULL_CONTROLLER_KUBE_FAKE_KUBELET_H_

#include <string>

#include "controller/kube/kube_api.h"

namespace skrull::kube {

// Sets status.phase and every container's state, for the containers in
// spec.containers:
//   "Pending"   waiting, reason `reason` (e.g. "ImagePullBackOff",
//               "ContainerCreating" when empty); status.reason unset
//   "Running"   running and ready; status.podIP set
//   "Succeeded" terminated, exit code 0, reason "Completed" when empty
//   "Failed"    terminated, `exit_code` (1 when 0), reason "Error" when
//               empty (e.g. "OOMKilled")
// Returns the pod as stored; errors from the API as they come.
// InvalidArgument for another phase.
StatusOr<json> SetPodPhase(KubeApi& api, const std::string& ns, const std::string& name,
                           const std::string& phase, const std::string& reason = "",
                           int exit_code = 0);

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_FAKE_KUBELET_H_
