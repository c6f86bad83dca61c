// `skrull-job`: check and show SkrullJob files. The binary's main only
// forwards its arguments here, so tests can run the CLI in-process too.
//
//   skrull-job validate FILE...   "FILE: ok" and a summary paragraph per file
//   skrull-job show FILE          the spec with every default filled in, as YAML
//   skrull-job help               usage
//
// Exit status: 0 when every file is valid, 2 when one is not (or cannot be
// read) and for bad usage. Results go to `out`, errors and usage to `err`.
#ifndef SKRULL_API_SKRULL_JOB_CLI_H_
#define SKRULL_API_SKRULL_JOB_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace skrull::api {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 2;

// `args` excludes the program name.
int RunSkrullJobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace skrull::api

#endif  // SKRULL_API_SKRULL_JOB_CLI_H_
