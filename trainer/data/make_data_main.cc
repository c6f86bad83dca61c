// skrull-make-data: writes the example long-context key-retrieval SFT data set
// (trainer/data/key_retrieval.h).
//   skrull-make-data --out examples/data/quickstart.jsonl [--n 2000] [--seed 0]
//       [--short-min 64] [--short-max 512] [--long-min 2048] [--long-max 6144]
//       [--long-fraction 0.05] [--format tokenized-jsonl|text-jsonl]
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "trainer/data/key_retrieval.h"

namespace {

constexpr char kUsage[] =
    "usage: skrull-make-data --out FILE [--n N] [--seed S]\n"
    "         [--short-min T] [--short-max T] [--long-min T] [--long-max T]\n"
    "         [--long-fraction F] [--format tokenized-jsonl|text-jsonl]\n"
    "Writes N key-retrieval chats (lengths in tokens of the byte tokenizer) as JSONL.\n"
    "Defaults: --n 2000 --seed 0 --short-min 64 --short-max 512 --long-min 2048\n"
    "          --long-max 6144 --long-fraction 0.05 --format tokenized-jsonl\n";

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using skrull::api::DataFormat;
  skrull::data::KeyRetrievalOptions options;
  std::string out;
  std::string errors;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::string value;
    size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      errors += "  " + flag + ": needs a value\n";
      break;
    }
    int64_t n = 0;
    bool ok = true;
    if (flag == "--out") {
      out = value;
    } else if (flag == "--format") {
      if (value == "tokenized-jsonl") {
        options.format = DataFormat::kTokenizedJsonl;
      } else if (value == "text-jsonl") {
        options.format = DataFormat::kTextJsonl;
      } else {
        errors += "  --format: must be tokenized-jsonl or text-jsonl (got '" + value + "')\n";
      }
    } else if (flag == "--long-fraction") {
      ok = ParseDouble(value, &options.long_fraction);
    } else if (flag == "--seed") {
      ok = ParseInt(value, &n) && n >= 0;
      options.seed = static_cast<uint64_t>(n);
    } else if (flag == "--n" || flag == "--short-min" || flag == "--short-max" ||
               flag == "--long-min" || flag == "--long-max") {
      ok = ParseInt(value, &n);
      if (flag == "--n") options.n = n;
      if (flag == "--short-min") options.short_min_tokens = n;
      if (flag == "--short-max") options.short_max_tokens = n;
      if (flag == "--long-min") options.long_min_tokens = n;
      if (flag == "--long-max") options.long_max_tokens = n;
    } else {
      errors += "  " + flag + ": unknown flag (see --help)\n";
    }
    if (!ok) errors += "  " + flag + ": not a valid number: '" + value + "'\n";
  }
  if (out.empty()) errors += "  --out: required; name the .jsonl file to write\n";
  if (!errors.empty()) {
    std::cerr << "skrull-make-data: bad flags:\n" << errors << kUsage;
    return 2;
  }
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
