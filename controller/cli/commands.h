// The commands of `skrull-controller` (flags.h): each takes its parsed flags
// and what main read from the environment, prints to the given streams and
// returns the process exit code (0 ok, 1 the job or the service failed,
// 2 bad input: flags, job file, credentials).
#ifndef SKRULL_CONTROLLER_CLI_COMMANDS_H_
#define SKRULL_CONTROLLER_CLI_COMMANDS_H_

#include <atomic>
#include <map>
#include <ostream>
#include <string>

#include "controller/cli/flags.h"
#include "controller/kube/kube_config.h"

namespace skrull::controller::cli {

struct Environment {
  std::map<std::string, std::string> vars;  // the process environment
  kube::InClusterEnv in_cluster;
  std::string pod_namespace;  // $POD_NAMESPACE (downward API)
  std::string pod_name;       // $POD_NAME, else the host name
};

int RunRender(const RenderFlags& flags, std::ostream& out, std::ostream& err);
int RunTune(const TuneFlags& flags, std::ostream& out, std::ostream& err);
// `interrupt` is polled for a signal to forward to the trainer (non-zero).
int RunLocal(const RunFlags& flags, const Environment& env, const std::atomic<int>* interrupt,
             std::ostream& out, std::ostream& err);
// Returns when `stop` is set (0) or leadership is lost (1).
int RunServe(const ServeFlags& flags, const Environment& env, const std::atomic<bool>& stop,
             std::ostream& err);

}  // namespace skrull::controller::cli

#endif  // SKRULL_CONTROLLER_CLI_COMMANDS_H_
