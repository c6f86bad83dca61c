// The failure record: what a rank writes when it fails, so the launcher can
// name the rank that failed first rather than the first one it saw exit.
//
// When one rank fails (a full disk, a bad file), its peers fail soon after in
// their next collective because their partner is gone; they may well exit
// before it does (it is still unwinding, or exits slower). Each rank of a
// launched job therefore writes, before it tears its process groups down,
//
//   <outputDir>/ranks/rank-<r>/failure.json
//   {"schema": 1, "rank": 1, "run_id": "...", "unix_micros": 1764300000123456,
//    "cause": "own" | "peer", "status": "IO_ERROR", "message": "..."}
//
// "peer" marks a failure of a collective or of the rendezvous (a peer did not
// answer): the consequence of another rank's failure more often than a cause.
// The launcher removes old records before it starts the ranks and ignores a
// record whose run_id is not its launch's. PickFailedRank is the launcher's
// rule; it is pure.
//
// Torch-free (the launcher library). Thread safety: values and free functions.
#ifndef SKRULL_TRAINER_DIST_FAILURE_RECORD_H_
#define SKRULL_TRAINER_DIST_FAILURE_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::dist {

inline constexpr int kFailureRecordSchema = 1;
// A record larger than this is not one the trainer wrote; it is ignored.
inline constexpr int64_t kMaxFailureRecordBytes = 64 * 1024;
// Messages are cut to this many bytes in the record.
inline constexpr size_t kMaxFailureMessageBytes = 4096;

struct FailureRecord {
  int rank = 0;
  std::string run_id;
  int64_t unix_micros = 0;  // when the rank saw its error (system clock)
  bool peer = false;        // a collective or the rendezvous failed
  std::string status;       // StatusCodeName of the error
  std::string message;
};

std::string RankFailurePath(const std::string& output_dir, int rank);

// True when `status` is a collective's or the rendezvous' failure:
// kUnavailable, or a CollectiveError's text ("c10d <op> failed on ...") that
// reached the trainer's boundary as another code.
bool IsPeerFailure(const Status& status);

// The record for `status` on `rank`, stamped with the current time.
FailureRecord MakeFailureRecord(int rank, const std::string& run_id, const Status& status);

std::string FormatFailureRecord(const FailureRecord& record);

// Parses a record; InvalidArgument naming `origin` and the field.
StatusOr<FailureRecord> ParseFailureRecord(const std::string& text, const std::string& origin);

// Writes RankFailurePath(output_dir, record.rank) atomically.
Status WriteFailureRecord(const std::string& output_dir, const FailureRecord& record);

// The record of `rank` for launch `run_id`; nullopt when there is none, it is
// unreadable, larger than kMaxFailureRecordBytes, or of another launch.
std::optional<FailureRecord> ReadFailureRecord(const std::string& output_dir, int rank,
                                               const std::string& run_id);

// One rank that ended unsuccessfully, as the launcher saw it.
struct FailedRank {
  std::optional<FailureRecord> record;
  int signal = 0;                    // the signal that ended it; 0 if it exited
  bool stopped_by_launcher = false;  // the launcher had signalled it
  int64_t seen_unix_micros = 0;      // when the launcher saw it end
};

// Index into `ranks` of the rank to blame, in this order of evidence:
//   1. a record of its own failure (not a peer's), or a death by a signal the
//      launcher did not send (a crash: SIGSEGV, SIGFPE, SIGABRT, ..., even
//      after the launcher signalled it; it sends SIGTERM and SIGKILL and
//      forwards SIGINT, SIGTERM and SIGHUP);
//   2. a failed exit without a record, the launcher not having signalled it;
//   3. a record of a peer failure;
//   4. anything else (stopped by the launcher).
// Within a class, the earliest time (the record's, else when it was seen
// ending). REQUIRES: !ranks.empty().
size_t PickFailedRank(const std::vector<FailedRank>& ranks);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_FAILURE_RECORD_H_
