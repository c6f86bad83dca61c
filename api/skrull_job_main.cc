// skrull-job: see api/skrull_job_cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "api/skrull_job_cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return skrull::api::RunSkrullJobCli(args, std::cout, std::cerr);
}
