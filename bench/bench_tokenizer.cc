// bench_tokenizer: tokenizer throughput on English text, against the byte
// tokenizer measured in the same run, and the parallel data-set index.
//
//   build/bin/bench_tokenizer --tokenizer third_party/npm/tokenizer-refs/tokenizer-qwen3/models
//       [--corpus-mb 16] [--threads 0]
//
// Corpus: the English licence texts Debian ships in /usr/share/common-licenses
// (base-files), one paragraph per {"text": ...} line, repeated to --corpus-mb.
// Rows: the byte tokenizer (trainer/data/byte_tokenizer.h, the baseline), the
// Hugging Face tokenizer on one thread (Tokenizer::Encode), and Dataset::Open
// indexing the same lines as text-jsonl on --threads threads (0 = all cores).
// Checks: the index's token total equals the single-thread encode's.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "tokenizer/text_encoder.h"
#include "trainer/data/byte_tokenizer.h"
#include "trainer/data/dataset.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<std::string> Paragraphs(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line, paragraph;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t") == std::string::npos) {
        if (!paragraph.empty()) out.push_back(paragraph);
        paragraph.clear();
      } else {
        paragraph += (paragraph.empty() ? "" : "\n") + line;
      }
    }
    if (!paragraph.empty()) out.push_back(paragraph);
  }
  return out;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// CPU seconds of this process, all threads: MB per CPU-second is the
// per-core rate even when other processes share the cores.
double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path;
  double corpus_mb = 16;
  int threads = 0;
  std::string licenses = "/usr/share/common-licenses";
  CLI::App app{"Tokenizer throughput on English text"};
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json or model folder")->required();
  app.add_option("--corpus-mb", corpus_mb, "corpus size in MB (10^6 bytes)");
  app.add_option("--threads", threads, "threads for the data-set index (0 = all cores)");
  app.add_option("--text-dir", licenses, "folder of English text files");
  CLI11_PARSE(app, argc, argv);

  const std::vector<std::string> paragraphs = Paragraphs(licenses);
  if (paragraphs.empty()) {
    std::cerr << "bench_tokenizer: no text in " << licenses << "\n";
    return 1;
  }
  std::vector<std::string> corpus;
  size_t bytes = 0;
  for (size_t i = 0; bytes < corpus_mb * 1e6; ++i) {
    corpus.push_back(paragraphs[i % paragraphs.size()]);
    bytes += corpus.back().size();
  }
  const double mb = static_cast<double>(bytes) / 1e6;

  auto t_load = Clock::now();
  const double c_load = CpuSeconds();
  auto encoder = skrull::tokenizer::TextEncoder::Load({tokenizer_path, ""});
  const double load_s = Seconds(t_load);
  const double load_cpu = CpuSeconds() - c_load;
  if (!encoder.ok()) {
    std::cerr << "bench_tokenizer: " << encoder.status().message() << "\n";
    return 1;
  }

  auto t0 = Clock::now();
  double c0 = CpuSeconds();
  int64_t byte_tokens = 0;
  for (const std::string& p : corpus) {
    auto r = skrull::data::EncodeText(p);
    byte_tokens += r.ok() ? static_cast<int64_t>(r->input_ids.size()) : 0;
  }
  const double byte_s = Seconds(t0);
  const double byte_cpu = CpuSeconds() - c0;

  t0 = Clock::now();
  c0 = CpuSeconds();
  int64_t bpe_tokens = 0;
  std::vector<int32_t> ids;
  for (const std::string& p : corpus) {
    ids.clear();
    if (!(*encoder)->tokenizer().Encode(p, true, &ids).ok()) return 1;
    bpe_tokens += static_cast<int64_t>(ids.size());
  }
  const double bpe_s = Seconds(t0);
  const double bpe_cpu = CpuSeconds() - c0;

  const fs::path dir =
      fs::temp_directory_path() / ("skrull_bench_tokenizer_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "corpus.jsonl");
    for (const std::string& p : corpus) out << nlohmann::json({{"text", p}}).dump() << "\n";
  }
  skrull::data::DatasetOptions o;
  o.path = (dir / "corpus.jsonl").string();
  o.format = skrull::api::DataFormat::kTextJsonl;
  o.tokenizer = tokenizer_path;
  o.threads = threads;
  o.cache_index = false;
  const int used_threads =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  t0 = Clock::now();
  c0 = CpuSeconds();
  auto ds = skrull::data::Dataset::Open(o);
  // Dataset::Open loads the tokenizer itself; count only the indexing.
  const double index_s = Seconds(t0) - load_s;
  const double index_cpu = CpuSeconds() - c0 - load_cpu;
  fs::remove_all(dir);
  if (!ds.ok()) {
    std::cerr << "bench_tokenizer: " << ds.status().message() << "\n";
    return 1;
  }
  const bool same = (*ds)->stats().total_tokens == bpe_tokens;

  using skrull::bench::Fmt;
  std::cout << "corpus: " << Fmt("%.1f", mb) << " MB of English (" << corpus.size()
            << " paragraphs from " << licenses << "), tokenizer " << tokenizer_path
            << " (loaded in " << Fmt("%.2f", load_s) << " s, not counted below)\n\n";
  std::cout << skrull::bench::FormatTable(
      {"encoder", "threads", "wall s", "CPU s", "tokens", "MB/s", "MB per CPU-s"},
      {{"byte tokenizer (baseline)", "1", Fmt("%.2f", byte_s), Fmt("%.2f", byte_cpu),
        std::to_string(byte_tokens), Fmt("%.1f", mb / byte_s), Fmt("%.1f", mb / byte_cpu)},
       {"byte-level BPE encode", "1", Fmt("%.2f", bpe_s), Fmt("%.2f", bpe_cpu),
        std::to_string(bpe_tokens), Fmt("%.1f", mb / bpe_s), Fmt("%.1f", mb / bpe_cpu)},
       {"text-jsonl index (Dataset::Open)", std::to_string(used_threads), Fmt("%.2f", index_s),
        Fmt("%.2f", index_cpu), std::to_string((*ds)->stats().total_tokens),
        Fmt("%.1f", mb / index_s), Fmt("%.1f", mb / index_cpu)}});
  std::cout << "\nBPE encode / byte tokenizer (MB per CPU-s): " << Fmt("%.3f", byte_cpu / bpe_cpu)
            << "x; index on " << used_threads
            << " threads / BPE encode on 1 (wall): " << Fmt("%.2f", bpe_s / index_s) << "x\n";
  std::cout << "target >= 5 MB/s per core: BPE encode " << (mb / bpe_cpu >= 5 ? "met" : "NOT met")
            << ", index " << (mb / index_cpu >= 5 ? "met" : "NOT met")
            << "; index tokens equal encode tokens: " << (same ? "yes" : "NO") << "\n";
  return same ? 0 : 1;
}
