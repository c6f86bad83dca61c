// bench_lengths: writes a `skrull-plan`-compatible lengths file sampled from
// one of the benchmark distributions.
//   bench_lengths --dataset wikipedia --n 100000 --seed 1 > wiki.txt
//   bench_lengths --list
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/length_samplers.h"
#include "scheduler/cli/lengths_file.h"

// Bounds --n so a typo cannot ask for terabytes.
constexpr uint64_t kMaxLengths = uint64_t{1} << 27;

int main(int argc, char** argv) {
  std::string dataset;
  uint64_t n = 0;
  uint64_t seed = 1;
  bool list = false;
  CLI::App app{"bench_lengths: a skrull-plan lengths file sampled from a benchmark distribution"};
  app.footer(
      "usage: bench_lengths --dataset NAME --n N [--seed S]   (lengths file on stdout)\n"
      "       bench_lengths --list                            (datasets and their CDF knots)");
  app.add_flag("--list", list, "print the datasets and their CDF knots");
  app.add_option("--dataset", dataset, "distribution to sample (required without --list)");
  app.add_option("--n", n, "how many lengths (required without --list)")
      ->check(CLI::Range(uint64_t{1}, kMaxLengths));
  app.add_option("--seed", seed, "sampler seed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0, bad flags 2
  }
  if (list) {
    for (const std::string& name : skrull::bench::DatasetNames()) {
      auto s = skrull::bench::Dataset(name);
      std::cout << name << ": " << s->description() << "\n  mean " << s->MeanTokens()
                << " tokens; knots (tokens: P(L < tokens)):";
      for (const auto& k : s->knots()) std::cout << " " << k.length_tokens << ":" << k.cumulative;
      std::cout << "\n";
    }
    return 0;
  }
  auto sampler = skrull::bench::Dataset(dataset);
  std::string problem = dataset.empty() ? "--dataset: required"
                        : n == 0        ? "--n: required"
                        : sampler.ok()  ? ""
                                        : "--dataset: " + sampler.status().message();
  if (!problem.empty()) {
    std::cerr << "bench_lengths: " << problem << "\nRun with --help for more information.\n";
    return 2;
  }
  std::vector<int64_t> lengths = sampler->SampleMany(static_cast<int64_t>(n), seed);
  std::string text = skrull::scheduler::cli::FormatLengths(
      lengths, "dataset=" + dataset + " n=" + std::to_string(n) + " seed=" + std::to_string(seed) +
                   " (" + sampler->description() + ")");
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
