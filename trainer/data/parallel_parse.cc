#include "trainer/data/parallel_parse.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace skrull::data {

BatchParser::BatchParser(ParseFn parse, int threads, size_t max_bytes, size_t max_lines)
    : parse_(std::move(parse)),
      threads_(std::max(threads, 1)),
      max_bytes_(max_bytes),
      max_lines_(max_lines) {
  for (int t = 1; t < threads_; ++t) helpers_.emplace_back([this] { Helper(); });
}

BatchParser::~BatchParser() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void BatchParser::Work() {
  while (true) {
    size_t i;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= lines_.size()) return;
      i = next_++;
    }
    QueuedLine& line = lines_[i];
    if (line.kind == QueuedLine::Kind::kParse) line.status = parse_(line.text, &line.record);
  }
}

void BatchParser::Helper() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Work();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    done_.notify_all();
  }
}

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
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_ = 0;
    busy_ = static_cast<int>(helpers_.size());
    ++generation_;
  }
  wake_.notify_all();
  Work();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return busy_ == 0; });
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
