// skrull-plan: schedule and simulate Skrull data plans (see `skrull-plan --help`).
#include <iostream>
#include <string>
#include <vector>

#include "scheduler/cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return skrull::scheduler::cli::RunCli(args, std::cout, std::cerr);
}
