// Names, labels and annotations the controller puts on the objects it owns.
// The Helm chart's PodMonitor and the docs select on these; change them
// together (charts/skrull/templates/, docs/deploy.md).
#ifndef SKRULL_CONTROLLER_RECONCILE_NAMES_H_
#define SKRULL_CONTROLLER_RECONCILE_NAMES_H_

#include <string>

namespace skrull::controller {

// Labels on every trainer pod (and the job's Service and ConfigMap).
inline constexpr char kLabelName[] = "app.kubernetes.io/name";            // "skrull"
inline constexpr char kLabelComponent[] = "app.kubernetes.io/component";  // "trainer"
inline constexpr char kLabelManagedBy[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedByValue[] = "skrull-controller";
inline constexpr char kLabelJobName[] = "skrull.io/job-name";
inline constexpr char kLabelNodeRank[] = "skrull.io/node-rank";  // pods only
inline constexpr char kLabelAttempt[] = "skrull.io/attempt";     // pods only: 0, 1, ...

// Annotations under this prefix are kubectl's own (last-applied-configuration):
// the job's other annotations go on every object it owns, these do not.
inline constexpr char kKubectlAnnotationPrefix[] = "kubectl.kubernetes.io/";

// The job's objects: ConfigMap "<job>-spec" holding the job YAML every rank
// loads, headless Service "<job>" giving pods stable DNS names, and one pod
// per node and attempt, "<job>-node-<node>-<attempt>", with hostname
// "<job>-node-<node>" so node 0 is <job>-node-0.<job>.<namespace>.svc.
inline std::string SpecConfigMapName(const std::string& job) { return job + "-spec"; }
inline std::string ServiceName(const std::string& job) { return job; }
inline std::string PodHostname(const std::string& job, int node) {
  return job + "-node-" + std::to_string(node);
}
inline std::string PodName(const std::string& job, int node, int attempt) {
  return PodHostname(job, node) + "-" + std::to_string(attempt);
}

// Where the ConfigMap is mounted in trainer pods, and the file in it.
inline constexpr char kJobSpecMountPath[] = "/etc/skrull";
inline constexpr char kJobSpecFileName[] = "job.yaml";
inline constexpr char kTrainerContainerName[] = "trainer";
// Node 0 serves the rendezvous TCPStore on this port.
inline constexpr int kRendezvousPort = 29500;

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_RECONCILE_NAMES_H_
