// Private to trainer/data: parses a batch of JSONL lines on several threads.
// Indexing text-jsonl is dominated by tokenization (a few MB/s per core), so
// Dataset::Open queues lines here and parses each batch in parallel, then
// consumes the results in file order (so messages and the index are the same
// as a serial pass).
#ifndef SKRULL_TRAINER_DATA_PARALLEL_PARSE_H_
#define SKRULL_TRAINER_DATA_PARALLEL_PARSE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "trainer/data/jsonl_record.h"

namespace skrull::data {

struct QueuedLine {
  enum class Kind { kParse, kBlank, kTooLong };  // only kParse lines are parsed
  Kind kind = Kind::kParse;
  std::string text;  // kParse only
  uint64_t bytes = 0;
  int64_t offset = 0;
  int64_t number = 0;
  Status status;  // after Run
  TokenRecord record;
};

class BatchParser {
 public:
  using ParseFn = std::function<Status(std::string_view line, TokenRecord* record)>;
  // `threads` >= 1 (1 = parse on the calling thread). A batch runs when it
  // holds `max_bytes` of text or `max_lines` lines.
  // The helper threads live as long as the parser, so per-thread caches
  // (the tokenizer's piece cache) stay warm across batches.
  BatchParser(ParseFn parse, int threads, size_t max_bytes = 8 << 20, size_t max_lines = 1 << 14);
  ~BatchParser();
  BatchParser(const BatchParser&) = delete;
  BatchParser& operator=(const BatchParser&) = delete;

  void Add(std::string_view text, int64_t offset, int64_t number, QueuedLine::Kind kind);
  bool Full() const { return bytes_ >= max_bytes_ || lines_.size() >= max_lines_; }
  // Parses every queued kParse line.
  void Run();
  std::vector<QueuedLine>& lines() { return lines_; }
  void Clear();

 private:
  ParseFn parse_;
  int threads_;
  size_t max_bytes_;
  size_t max_lines_;
  size_t bytes_ = 0;
  std::vector<QueuedLine> lines_;

  void Work();    // parses lines until none is left in this batch
  void Helper();  // a helper thread's loop
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // bumped per batch
  int busy_ = 0;             // helpers still working on the batch
  bool stop_ = false;
  size_t next_ = 0;  // next line to parse (guarded by mu_)
  std::vector<std::thread> helpers_;
};

// Threads for indexing: `requested` when > 0, else the machine's cores (>= 1).
int IndexThreads(int requested);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_PARALLEL_PARSE_H_
