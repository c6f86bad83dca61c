// bench_lengths: writes a `skrull-plan`-compatible lengths file sampled from
// one of the benchmark distributions.
//   bench_lengths --dataset wikipedia --n 100000 --seed 1 > wiki.txt
//   bench_lengths --list
#include <cstdio>
#include <iostream>
#include <string>

#include "bench/length_samplers.h"
#include "scheduler/cli/lengths_file.h"

namespace {

constexpr char kUsage[] =
    "usage: bench_lengths --dataset NAME --n N [--seed S]   (lengths file on stdout)\n"
    "       bench_lengths --list                            (datasets and their CDF knots)\n";

int Fail(const std::string& message) {
  std::cerr << "bench_lengths: " << message << "\n" << kUsage;
  return 2;
}

bool ParseUint(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dataset;
  uint64_t n = 0;
  uint64_t seed = 1;
  bool have_n = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--list") {
      for (const std::string& name : skrull::bench::DatasetNames()) {
        auto s = skrull::bench::Dataset(name);
        std::cout << name << ": " << s->description() << "\n  mean " << s->MeanTokens()
                  << " tokens; knots (tokens: P(L < tokens)):";
        for (const auto& k : s->knots()) std::cout << " " << k.length_tokens << ":" << k.cumulative;
        std::cout << "\n";
      }
      return 0;
    }
    if (i + 1 >= argc) return Fail(arg + ": missing value");
    std::string value = argv[++i];
    if (arg == "--dataset") {
      dataset = value;
    } else if (arg == "--n") {
      if (!ParseUint(value, &n) || n == 0) return Fail("--n: expected a positive integer");
      have_n = true;
    } else if (arg == "--seed") {
      if (!ParseUint(value, &seed)) return Fail("--seed: expected a non-negative integer");
    } else {
      return Fail("unknown flag '" + arg + "'");
    }
  }
  if (dataset.empty()) return Fail("--dataset: required");
  if (!have_n) return Fail("--n: required");
  auto sampler = skrull::bench::Dataset(dataset);
  if (!sampler.ok()) return Fail("--dataset: " + sampler.status().message());
  std::vector<int64_t> lengths = sampler->SampleMany(static_cast<int64_t>(n), seed);
  std::string text = skrull::scheduler::cli::FormatLengths(
      lengths, "dataset=" + dataset + " n=" + std::to_string(n) + " seed=" + std::to_string(seed) +
                   " (" + sampler->description() + ")");
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
