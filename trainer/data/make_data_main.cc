// skrull-make-data: writes the example long-context key-retrieval SFT data set
// (trainer/data/key_retrieval.h).
//   skrull-make-data --out examples/data/quickstart.jsonl [--n 2000] [--seed 0]
//       [--short-min 64] [--short-max 512] [--long-min 2048] [--long-max 6144]
//       [--long-fraction 0.05] [--format tokenized-jsonl|text-jsonl]
// Exit status: 0 written, 2 bad flags or options, 1 the file could not be
// written.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "trainer/data/key_retrieval.h"

int main(int argc, char** argv) {
  using skrull::api::DataFormat;
  skrull::data::KeyRetrievalOptions options;
  std::string out;
  CLI::App app{"Writes N key-retrieval chats (lengths in tokens of the byte tokenizer) as JSONL.",
               "skrull-make-data"};
  app.add_option("--out", out, "the .jsonl file to write")->required();
  app.add_option("--n", options.n, "number of samples")->capture_default_str();
  // Checked as text first: a negative seed would wrap around as uint64_t.
  app.add_option("--seed", options.seed, "random seed (>= 0)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--short-min", options.short_min_tokens, "shortest short sample, tokens")
      ->capture_default_str();
  app.add_option("--short-max", options.short_max_tokens, "longest short sample, tokens")
      ->capture_default_str();
  app.add_option("--long-min", options.long_min_tokens, "shortest long sample, tokens")
      ->capture_default_str();
  app.add_option("--long-max", options.long_max_tokens, "longest long sample, tokens")
      ->capture_default_str();
  app.add_option("--long-fraction", options.long_fraction, "fraction of long samples, [0, 1]")
      ->capture_default_str();
  std::string format = "tokenized-jsonl";
  app.add_option("--format", format, "what to write")
      ->check(CLI::IsMember({"tokenized-jsonl", "text-jsonl"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; a bad flag exits 2, as every skrull tool does.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  options.format = format == "text-jsonl" ? DataFormat::kTextJsonl : DataFormat::kTokenizedJsonl;
  auto summary = skrull::data::WriteKeyRetrievalData(options, out);
  if (!summary.ok()) {
    std::cerr << "skrull-make-data: " << summary.status().message() << "\n";
    return summary.status().code() == skrull::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::cout << "skrull-make-data: wrote " << out << ": " << summary->samples << " samples ("
            << summary->long_samples << " long), " << summary->total_tokens << " tokens, longest "
            << summary->max_tokens << ", " << summary->bytes << " bytes\n";
  return 0;
}
