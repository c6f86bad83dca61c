// A main for the fuzz targets in builds without libFuzzer (the normal GCC
// build): feeds every file named on the command line, and every file inside
// every directory named, to LLVMFuzzerTestOneInput, in sorted order. This
// turns the checked-in corpus fuzz/corpus/<target>/ (seeds, inputs the fuzzer
// found interesting, and every crash found, renamed crash-*) into a
// regression test: a crash or a failed property check aborts the process.
//
//   <target>_replay [--max-seconds=S] DIR_OR_FILE...
// Exits 0 after printing how many inputs were replayed; 2 when an argument
// does not exist, a directory holds no files, or a file cannot be read; 1
// when an input took longer than S seconds (a regression test for inputs
// that used to hang: the targets bound their work).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Appends the files `arg` names (itself, or the regular files in it).
bool CollectInputs(const std::string& arg, std::vector<fs::path>* inputs) {
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) {
    inputs->push_back(arg);
    return true;
  }
  if (!fs::is_directory(arg, ec)) {
    std::cerr << arg << ": no such file or directory\n";
    return false;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(arg, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (ec || files.empty()) {
    std::cerr << arg << ": " << (ec ? ec.message() : "no input files in the corpus directory")
              << "\n";
    return false;
  }
  std::sort(files.begin(), files.end());
  inputs->insert(inputs->end(), files.begin(), files.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " CORPUS_DIR_OR_FILE...\n";
    return 2;
  }
  std::vector<fs::path> inputs;
  double max_seconds = 0;  // 0 = no limit
  const std::string flag = "--max-seconds=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag, 0) == 0) {
      max_seconds = std::atof(arg.c_str() + flag.size());
      continue;
    }
    if (!CollectInputs(arg, &inputs)) return 2;
  }
  int slow = 0;
  for (const fs::path& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::cerr << path.string() << ": cannot read\n";
      return 2;
    }
    // Printed before the call so that a crash names its input.
    std::cerr << "replaying " << path.string() << " (" << bytes.size() << " bytes)\n";
    const auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (max_seconds > 0 && seconds > max_seconds) {
      std::cerr << path.string() << ": took " << seconds << " s, over --max-seconds=" << max_seconds
                << "\n";
      ++slow;
    }
  }
  std::cout << "replayed " << inputs.size() << " inputs\n";
  return slow > 0 ? 1 : 0;
}
