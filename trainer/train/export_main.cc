// skrull-export: a saved model folder to a serving folder (export.h).
#include <iostream>
#include <string>
#include <vector>

#include "trainer/train/export.h"

int main(int argc, char** argv) {
  using namespace skrull;
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << train::ExportUsage();
      return 0;
    }
  }
  StatusOr<train::ExportOptions> options = train::ParseExportFlags(args);
  if (!options.ok()) {
    std::cerr << "skrull-export: " << options.status().message() << "\n" << train::ExportUsage();
    return 2;
  }
  Status done = train::ExportModel(*options);
  if (!done.ok()) {
    std::cerr << "skrull-export: " << done.message() << std::endl;
    return 1;
  }
  std::cout << "skrull-export: wrote " << options->out << std::endl;
  return 0;
}
