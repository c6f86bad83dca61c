#include "controller/cli/flags.h"

#include <charconv>
#include <functional>
#include <map>

namespace skrull::controller::cli {
namespace {

struct Spec {
  bool takes_value = true;
  std::function<void(const std::string&, std::vector<std::string>*)> set;
};

std::function<void(const std::string&, std::vector<std::string>*)> Str(std::string* out) {
  return [out](const std::string& v, std::vector<std::string>*) { *out = v; };
}

std::function<void(const std::string&, std::vector<std::string>*)> Int(const std::string& flag,
                                                                       int* out, int min, int max) {
  return [flag, out, min, max](const std::string& v, std::vector<std::string>* errors) {
    int x = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < min || x > max) {
      errors->push_back(flag + ": expected an integer in " + std::to_string(min) + ".." +
                        std::to_string(max) + " (got '" + v + "')");
      return;
    }
    *out = x;
  };
}

std::function<void(const std::string&, std::vector<std::string>*)> Flag(bool* out) {
  return [out](const std::string&, std::vector<std::string>*) { *out = true; };
}

// Parses args[1..] against `specs`; the one positional argument (the job
// file) goes to *positional when it is non-null.
void ParseFlags(const std::vector<std::string>& args, const std::map<std::string, Spec>& specs,
                std::string* positional, std::vector<std::string>* errors) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (positional != nullptr && positional->empty()) {
        *positional = a;
      } else {
        errors->push_back("unexpected argument '" + a + "'");
      }
      continue;
    }
    std::string name = a, value;
    bool has_value = false;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    auto it = specs.find(name);
    if (it == specs.end()) {
      errors->push_back("unknown flag " + name + " for '" + args[0] + "'");
      continue;
    }
    if (it->second.takes_value && !has_value) {
      if (i + 1 >= args.size()) {
        errors->push_back(name + ": needs a value");
        continue;
      }
      value = args[++i];
    }
    it->second.set(value, errors);
  }
}

}  // namespace

std::string Usage() {
  return "usage: skrull-controller <command> ...\n"
         "  run JOB.yaml [--runs N] [--trainer PATH] [--trainer-arg ARG]...\n"
         "      run the job on this machine; with spec.tuning.enabled, --runs N retunes\n"
         "      bucketSize between runs from the measured memory\n"
         "  tune JOB.yaml --run DIR\n"
         "      the tuner's verdict on a finished run's output directory\n"
         "  render JOB.yaml [--attempt N] [--uid UID] [--trainer-image IMAGE]\n"
         "      print the Kubernetes objects the controller would create (a v1 List)\n"
         "  serve [--kubeconfig FILE] [--context NAME] [--namespace NS] [--metrics-port 8080]\n"
         "        [--metrics-address 0.0.0.0] [--leader-elect] [--lease-namespace NS]\n"
         "        [--lease-name NAME] [--trainer-image IMAGE] [--trainer-service-account SA]\n"
         "        [--resync-seconds 30] [--workers 2] [--prometheus-url URL]\n"
         "        [--prometheus-window 1h]\n"
         "      the Kubernetes operator (in-cluster credentials unless --kubeconfig)\n";
}

StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args) {
  Invocation inv;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h" || a == "help") {
      inv.help_text = Usage();
      return inv;
    }
  }
  if (args.empty()) return InvalidArgumentError("no command given\n" + Usage());
  std::vector<std::string> errors;
  const std::string& command = args[0];
  if (command == "run") {
    inv.command = Command::kRun;
    RunFlags& f = inv.run;
    ParseFlags(args,
               {{"--runs", {true, Int("--runs", &f.runs, 1, 1000)}},
                {"--trainer", {true, Str(&f.trainer)}},
                {"--trainer-arg",
                 {true, [&f](const std::string& v,
                             std::vector<std::string>*) { f.trainer_args.push_back(v); }}}},
               &f.job_file, &errors);
    if (f.job_file.empty()) errors.push_back("run: the job file is required (run JOB.yaml)");
  } else if (command == "tune") {
    inv.command = Command::kTune;
    TuneFlags& f = inv.tune;
    ParseFlags(args, {{"--run", {true, Str(&f.run_dir)}}}, &f.job_file, &errors);
    if (f.job_file.empty()) errors.push_back("tune: the job file is required (tune JOB.yaml)");
    if (f.run_dir.empty()) errors.push_back("--run: required: the run's output directory");
  } else if (command == "render") {
    inv.command = Command::kRender;
    RenderFlags& f = inv.render;
    ParseFlags(args,
               {{"--attempt", {true, Int("--attempt", &f.attempt, 0, 1000000)}},
                {"--uid", {true, Str(&f.uid)}},
                {"--trainer-image", {true, Str(&f.trainer_image)}}},
               &f.job_file, &errors);
    if (f.job_file.empty()) errors.push_back("render: the job file is required (render JOB.yaml)");
  } else if (command == "serve") {
    inv.command = Command::kServe;
    ServeFlags& f = inv.serve;
    ParseFlags(args,
               {{"--kubeconfig", {true, Str(&f.kubeconfig)}},
                {"--context", {true, Str(&f.context)}},
                {"--namespace", {true, Str(&f.watch_namespace)}},
                {"--metrics-port", {true, Int("--metrics-port", &f.metrics_port, 0, 65535)}},
                {"--metrics-address", {true, Str(&f.metrics_address)}},
                {"--leader-elect", {false, Flag(&f.leader_elect)}},
                {"--lease-namespace", {true, Str(&f.lease_namespace)}},
                {"--lease-name", {true, Str(&f.lease_name)}},
                {"--trainer-image", {true, Str(&f.trainer_image)}},
                {"--trainer-service-account", {true, Str(&f.trainer_service_account)}},
                {"--resync-seconds", {true, Int("--resync-seconds", &f.resync_seconds, 1, 86400)}},
                {"--workers", {true, Int("--workers", &f.workers, 1, 64)}},
                {"--prometheus-url", {true, Str(&f.prometheus_url)}},
                {"--prometheus-window", {true, Str(&f.prometheus_window)}}},
               nullptr, &errors);
  } else {
    return InvalidArgumentError("unknown command '" + command +
                                "'; expected run, tune, render or serve\n" + Usage());
  }
  if (!errors.empty()) {
    std::string message;
    for (const std::string& e : errors) message += e + "\n";
    return InvalidArgumentError(message + "see skrull-controller --help");
  }
  return inv;
}

}  // namespace skrull::controller::cli
