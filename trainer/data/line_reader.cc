#include "trainer/data/line_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace skrull::data {

LineReader::LineReader(int fd, std::string path, size_t max_line_bytes, size_t buffer_bytes)
    : fd_(fd), path_(std::move(path)), max_line_bytes_(std::max<size_t>(max_line_bytes, 1)) {
  capacity_ = std::clamp<size_t>(buffer_bytes, 1, max_line_bytes_ + 1);
  buffer_.reset(static_cast<char*>(std::malloc(capacity_)));
  if (buffer_ == nullptr) capacity_ = 0;  // Next fails in Grow
}

Status LineReader::Grow() {
  // Double, but go straight to the cap when doubling would leave less than
  // one more step of headroom (so the last step is not a tiny one).
  const size_t limit = max_line_bytes_ + 1;
  size_t wanted = std::max<size_t>(capacity_ * 2, 1);
  if (wanted >= limit || limit - wanted < wanted / 2) wanted = limit;
  char* grown = static_cast<char*>(std::realloc(buffer_.get(), wanted));
  if (grown == nullptr) {
    return ResourceExhaustedError(path_ + ": cannot allocate " + std::to_string(wanted) +
                                  " bytes for a line; lower spec.data.maxLineBytes");
  }
  (void)buffer_.release();
  buffer_.reset(grown);
  capacity_ = wanted;
  return OkStatus();
}

Status LineReader::TooLong() const {
  return InvalidArgumentError(path_ + ":" + std::to_string(line_number_ + 1) +
                              ": line is longer than " + std::to_string(max_line_bytes_) +
                              " bytes (spec.data.maxLineBytes); is this a JSONL file? Raise "
                              "spec.data.maxLineBytes if its lines really are this long");
}

Status LineReader::Fill() {
  if (begin_ > 0) {  // move the partial line to the front
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  // A line of max_line_bytes_ and its '\n' fit in max_line_bytes_ + 1.
  if (end_ == capacity_) SKRULL_RETURN_IF_ERROR(Grow());
  while (true) {
    ssize_t n = ::read(fd_, buffer_.get() + end_, capacity_ - end_);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path_ + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) eof_ = true;
    end_ += static_cast<size_t>(n);
    return OkStatus();
  }
}

StatusOr<bool> LineReader::Next(std::string_view* line, int64_t* offset, int64_t* number) {
  size_t scanned = begin_;  // bytes before this have no '\n'
  while (true) {
    const char* start = buffer_.get() + begin_;
    const void* nl = std::memchr(buffer_.get() + scanned, '\n', end_ - scanned);
    size_t len;
    size_t consumed;
    if (nl != nullptr) {
      len = static_cast<size_t>(static_cast<const char*>(nl) - start);
      consumed = len + 1;
    } else if (eof_) {
      if (begin_ == end_) return false;
      len = end_ - begin_;
      consumed = len;
    } else {
      if (end_ - begin_ > max_line_bytes_) return TooLong();
      scanned = end_ - begin_;
      SKRULL_RETURN_IF_ERROR(Fill());
      scanned += begin_;
      continue;
    }
    if (len > max_line_bytes_) return TooLong();
    *offset = file_offset_;
    *number = ++line_number_;
    if (len > 0 && start[len - 1] == '\r') --len;
    *line = std::string_view(start, len);
    begin_ += consumed;
    file_offset_ += static_cast<int64_t>(consumed);
    return true;
  }
}

}  // namespace skrull::data
