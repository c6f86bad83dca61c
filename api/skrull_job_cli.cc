#include "api/skrull_job_cli.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

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

int Validate(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
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

int Show(const std::string& file, std::ostream& out, std::ostream& err) {
  StatusOr<JobSpec> spec = LoadJobSpecFile(file);
  if (!spec.ok()) return Report(spec.status(), err);
  out << ToYaml(*spec);
  return kExitOk;
}

}  // namespace

int RunSkrullJobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Check and show SkrullJob files (docs/job-spec.md)", "skrull-job"};
  app.set_help_flag("-h,--help");
  app.require_subcommand(1);
  std::vector<std::string> files;
  CLI::App* validate = app.add_subcommand("validate", "check SkrullJob files");
  validate->add_option("FILE", files, "SkrullJob YAML files")->required();
  std::string show_file;
  CLI::App* show = app.add_subcommand("show", "print the spec with every default filled in");
  show->add_option("FILE", show_file, "a SkrullJob YAML file")->required();
  CLI::App* help = app.add_subcommand("help", "print the usage");

  if (args.empty()) return Usage(err, "missing command");
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << kUsage;
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const bool known = args[0] == "validate" || args[0] == "show" || args[0] == "help";
    if (!known && args[0].rfind('-', 0) != 0) return Usage(err, "unknown command " + args[0]);
    return Usage(err, e.what());
  }
  if (help->parsed()) {
    out << kUsage;
    return kExitOk;
  }
  if (validate->parsed()) return Validate(files, out, err);
  return Show(show_file, out, err);
}

}  // namespace skrull::api
