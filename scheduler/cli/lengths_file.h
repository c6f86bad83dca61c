// Sequence-length files: the input format of `skrull-plan`.
//
// One length (a positive integer token count, at most kMaxSequenceTokens of
// policy.h) per line. Blank lines and lines whose first non-space character
// is '#' are ignored; a trailing '# comment' after a number is allowed too.
// The i-th data line (0-based, counting only data lines) is the sequence with
// id i. Example:
//   # one global batch, DP=4 x 64
//   812
//   30517   # a long one
#ifndef SKRULL_SCHEDULER_CLI_LENGTHS_FILE_H_
#define SKRULL_SCHEDULER_CLI_LENGTHS_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::scheduler::cli {

// Parses the text of a lengths file. `origin` names it in errors, which read
// "<origin>:<line>: <problem> (got '<text>'); <fix>". Every bad line is
// reported (up to 10), not just the first. An empty file is an error.
StatusOr<std::vector<int64_t>> ParseLengths(const std::string& text, const std::string& origin);

// Reads and parses `path`. NotFound when it does not exist.
StatusOr<std::vector<int64_t>> ReadLengthsFile(const std::string& path);

// Serializes lengths in the format above (one per line, with an optional
// leading '# ' comment line when `comment` is not empty).
std::string FormatLengths(const std::vector<int64_t>& lengths, const std::string& comment = "");

}  // namespace skrull::scheduler::cli

#endif  // SKRULL_SCHEDULER_CLI_LENGTHS_FILE_H_
