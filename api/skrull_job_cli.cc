#include "api/skrull_job_cli.h"

#include "api/job_spec.h"

namespace skrull::api {
namespace {

constexpr char kUsage[] =
    "usage: skrull-job validate FILE...   check SkrullJob files; print a summary of each\n"
    "       skrull-job show FILE          print the spec with every default filled in\n"
    "       skrull-job help               print this text\n"
    "Exit status: 0 valid, 2 invalid or unreadable file, or bad usage.\n"
    "Field reference: docs/job-spec.md\n";

int Usage(std::ostream& err, const std::string& problem) {
  err << "skrull-job: " << problem << "\n" << kUsage;
  return kExitInvalid;
}

// Prints the errors of a failed load: the message already names the file.
int Report(const Status& status, std::ostream& err) {
  err << status.message() << "\n";
  return kExitInvalid;
}

}  // namespace

int RunSkrullJobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return Usage(err, "missing command");
  const std::string& command = args[0];
  if (command == "help" || command == "--help" || command == "-h") {
    out << kUsage;
    return kExitOk;
  }
  std::vector<std::string> files(args.begin() + 1, args.end());
  for (const std::string& f : files) {
    if (f.size() > 1 && f[0] == '-') return Usage(err, "unknown flag " + f);
  }
  if (command == "validate") {
    if (files.empty()) return Usage(err, "validate needs at least one FILE");
    int rc = kExitOk;
    for (const std::string& file : files) {
      StatusOr<JobSpec> spec = LoadJobSpecFile(file);
      if (!spec.ok()) {
        rc = Report(spec.status(), err);
        continue;
      }
      out << file << ": ok\n" << DescribeJobSpec(*spec) << "\n";
    }
    return rc;
  }
  if (command == "show") {
    if (files.size() != 1) return Usage(err, "show needs exactly one FILE");
    StatusOr<JobSpec> spec = LoadJobSpecFile(files[0]);
    if (!spec.ok()) return Report(spec.status(), err);
    out << ToYaml(*spec);
    return kExitOk;
  }
  return Usage(err, "unknown command " + command);
}

}  // namespace skrull::api
