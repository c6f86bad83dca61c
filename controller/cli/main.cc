// skrull-controller: parses flags and the environment, then calls a command
// (commands.h). See flags.h for the commands.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "controller/cli/commands.h"

extern char** environ;

namespace {

std::atomic<int> g_signal{0};

void OnSignal(int signum) { g_signal.store(signum); }

std::string Get(const std::map<std::string, std::string>& vars, const char* name) {
  auto it = vars.find(name);
  return it == vars.end() ? std::string() : it->second;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace skrull::controller::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  skrull::StatusOr<Invocation> inv = ParseCommandLine(args);
  if (!inv.ok()) {
    std::cerr << "skrull-controller: " << inv.status().message() << "\n";
    return 2;
  }
  if (inv->command == Command::kHelp) {
    std::cout << inv->help_text;
    return 0;
  }

  Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env.vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env.in_cluster.service_host = Get(env.vars, skrull::kube::kServiceHostEnv);
  env.in_cluster.service_port = Get(env.vars, skrull::kube::kServicePortEnv);
  env.pod_namespace = Get(env.vars, "POD_NAMESPACE");
  env.pod_name = Get(env.vars, "POD_NAME");
  if (env.pod_name.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) == 0) env.pod_name = host;
  }

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  switch (inv->command) {
    case Command::kRender:
      return RunRender(inv->render, std::cout, std::cerr);
    case Command::kTune:
      return RunTune(inv->tune, std::cout, std::cerr);
    case Command::kRun:
      return RunLocal(inv->run, env, &g_signal, std::cout, std::cerr);
    case Command::kServe: {
      std::atomic<bool> stop{false};
      std::thread watcher([&] {
        while (!stop) {
          if (g_signal.load() != 0) stop = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      });
      const int code = RunServe(inv->serve, env, stop, std::cerr);
      stop = true;
      watcher.join();
      return code;
    }
    case Command::kHelp:
      break;
  }
  return 0;
}
