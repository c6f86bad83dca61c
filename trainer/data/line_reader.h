// Private to trainer/data: streams a file's lines through a fixed buffer
// without holding the file in memory. Lines are capped in length, so a file
// without newlines (/dev/zero) costs at most about the cap in memory.
#ifndef SKRULL_TRAINER_DATA_LINE_READER_H_
#define SKRULL_TRAINER_DATA_LINE_READER_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace skrull::data {

class LineReader {
 public:
  // Reads `fd` (not owned) from its current position, `buffer_bytes` at a
  // time; a line longer than the buffer grows it, up to `max_line_bytes` + 1.
  // REQUIRES: max_line_bytes >= 1.
  LineReader(int fd, std::string path, size_t max_line_bytes, size_t buffer_bytes = 4 << 20);

  // The next line without its '\n' (and without a trailing '\r'), the byte
  // offset of its first byte, and its 1-based number. Valid until the next
  // call. Returns false at end of file; a last line without '\n' is a line.
  // A line over `max_line_bytes` (counted without its '\n') is an
  // InvalidArgument error naming PATH:LINE, the cap and
  // spec.data.maxLineBytes; it is found after reading at most cap + 1 of its
  // bytes, and the reader is not usable afterwards.
  StatusOr<bool> Next(std::string_view* line, int64_t* offset, int64_t* number);

 private:
  Status Grow();           // a larger buffer_, up to max_line_bytes_ + 1
  Status Fill();           // reads more bytes after end_; sets eof_
  Status TooLong() const;  // the error for the line being read

  int fd_;
  std::string path_;
  size_t max_line_bytes_;
  // malloc'd so that growing it is a realloc: large blocks are remapped, not
  // copied, so a line near the cap costs about the cap, not 1.5-2x.
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> buffer_;
  size_t capacity_ = 0;
  size_t begin_ = 0;         // first unread byte in buffer_
  size_t end_ = 0;           // one past the last valid byte in buffer_
  int64_t file_offset_ = 0;  // file offset of buffer_[begin_]
  int64_t line_number_ = 0;
  bool eof_ = false;
};

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_LINE_READER_H_
