// The ranks' failure records (trainer/dist/failure_record.h) and the rule that
// picks the rank to blame from them.
#include "trainer/dist/failure_record.h"

#include <gtest/gtest.h>

#include <csignal>
#include <vector>

namespace skrull::dist {
namespace {

TEST(FailureRecord, FormatsAndParsesBack) {
  FailureRecord r = MakeFailureRecord(3, "run-7", IoError("ckpt: No space left on device"));
  EXPECT_GT(r.unix_micros, 0);
  EXPECT_FALSE(r.peer);
  EXPECT_EQ(r.status, "IO_ERROR");
  auto back = ParseFailureRecord(FormatFailureRecord(r), "failure.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->run_id, "run-7");
  EXPECT_EQ(back->unix_micros, r.unix_micros);
  EXPECT_FALSE(back->peer);
  EXPECT_EQ(back->status, "IO_ERROR");
  EXPECT_EQ(back->message, "ckpt: No space left on device");
}

TEST(FailureRecord, ParseErrorsNameTheFileAndField) {
  EXPECT_EQ(ParseFailureRecord("[1]", "f.json").status().message(), "f.json: not a JSON object");
  EXPECT_EQ(ParseFailureRecord(R"({"schema": 1, "rank": 0, "run_id": "r", "unix_micros": 5,
                                   "cause": "bad"})",
                               "f.json")
                .status()
                .message(),
            "f.json: cause: must be \"own\" or \"peer\" (got \"bad\")");
  EXPECT_EQ(ParseFailureRecord(R"({"schema": 1, "rank": "0"})", "f.json").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(FailureRecord, CollectiveAndRendezvousFailuresArePeerFailures) {
  EXPECT_TRUE(IsPeerFailure(UnavailableError("rendezvous at 127.0.0.1:1: timed out")));
  EXPECT_TRUE(IsPeerFailure(InternalError(
      "error on rank 0: c10d allgather failed on cp[dp=0] rank 0/2 (global rank 0), 64 bytes, "
      "at cp_attention.cc:1: Connection closed by peer")));
  EXPECT_FALSE(IsPeerFailure(IoError("No space left on device")));
  EXPECT_FALSE(IsPeerFailure(InvalidArgumentError("tokenizer.json: model.vocab: bad")));
  EXPECT_TRUE(MakeFailureRecord(0, "r", UnavailableError("x")).peer);
}

FailedRank WithRecord(bool peer, int64_t micros, int64_t seen) {
  FailedRank f;
  f.record = FailureRecord();
  f.record->peer = peer;
  f.record->unix_micros = micros;
  f.seen_unix_micros = seen;
  return f;
}

FailedRank Without(int64_t seen, int signal, bool stopped) {
  FailedRank f;
  f.seen_unix_micros = seen;
  f.signal = signal;
  f.stopped_by_launcher = stopped;
  return f;
}

TEST(PickFailedRank, AnOwnErrorBeatsAPeerFailureSeenEarlier) {
  std::vector<FailedRank> ranks = {WithRecord(true, 200, 300), WithRecord(false, 100, 900)};
  ranks[1].stopped_by_launcher = true;  // signalled after rank 0 ended
  EXPECT_EQ(PickFailedRank(ranks), 1u);
}

TEST(PickFailedRank, AmongOwnErrorsTheEarliestRecord) {
  EXPECT_EQ(PickFailedRank({WithRecord(false, 500, 600), WithRecord(false, 400, 700)}), 1u);
}

TEST(PickFailedRank, ACrashBeatsAPeerFailureAndAStoppedRankIsNeverFirst) {
  // Rank 1 died of SIGSEGV (no record); rank 0's collective failed after it.
  EXPECT_EQ(PickFailedRank({WithRecord(true, 100, 150), Without(200, SIGSEGV, false)}), 1u);
  // The same when rank 0's exit was seen first and the launcher had signalled
  // rank 1 meanwhile: SIGSEGV is not a signal the launcher sends.
  EXPECT_EQ(PickFailedRank({WithRecord(true, 100, 150), Without(200, SIGSEGV, true)}), 1u);
  // A rank the launcher killed (SIGTERM) is blamed only when nothing else failed.
  EXPECT_EQ(PickFailedRank({Without(100, SIGTERM, true), Without(300, 0, false)}), 1u);
  EXPECT_EQ(PickFailedRank({Without(100, SIGKILL, true)}), 0u);
}

TEST(PickFailedRank, WithoutRecordsTheFirstExitSeen) {
  EXPECT_EQ(PickFailedRank({Without(300, 0, false), Without(200, 0, false)}), 1u);
}

}  // namespace
}  // namespace skrull::dist
