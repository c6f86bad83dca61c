#include "trainer/data/parallel_parse.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

namespace skrull::data {

BatchParser::BatchParser(ParseFn parse, int threads, size_t max_bytes, size_t max_lines)
    : parse_(std::move(parse)),
      threads_(std::max(threads, 1)),
      max_bytes_(max_bytes),
      max_lines_(max_lines) {}

void BatchParser::Add(std::string_view text, int64_t offset, int64_t number,
                      QueuedLine::Kind kind) {
  QueuedLine line;
  line.kind = kind;
  if (kind == QueuedLine::Kind::kParse) line.text.assign(text);
  line.bytes = text.size();
  line.offset = offset;
  line.number = number;
  bytes_ += line.text.size();
  lines_.push_back(std::move(line));
}

void BatchParser::Run() {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < lines_.size(); i = next.fetch_add(1)) {
      QueuedLine& line = lines_[i];
      if (line.kind == QueuedLine::Kind::kParse) line.status = parse_(line.text, &line.record);
    }
  };
  const size_t helpers = std::min<size_t>(static_cast<size_t>(threads_ - 1), lines_.size());
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

void BatchParser::Clear() {
  lines_.clear();
  bytes_ = 0;
}

int IndexThreads(int requested) {
  if (requested > 0) return requested;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

}  // namespace skrull::data
