// The example data set: long-context key retrieval, small enough for the
// quickstart's tiny byte-level model to learn from in a few dozen steps.
//
// Each sample is one chat (byte tokenizer template, byte_tokenizer.h):
//   user:      "<filler words> key=QXV <filler words>\nwhat is the key?"
//   assistant: "key=QXV"
// The key is 3 random uppercase letters hidden at a random word boundary of
// lowercase filler (no uppercase and no '=' elsewhere). Only the assistant
// turn carries loss: 8 tokens ("key=", the 3 letters, EOS). The 5 fixed ones
// are learnt within a few steps; the letters need retrieval (an induction head
// that finds the earlier '=' and copies what follows). Untrained loss is about
// ln 256 = 5.5 per token; knowing only the format gives 3 ln 26 / 8 = 1.2; full
// retrieval gives ~0.
//
// Lengths (in tokens, exact) are bimodal: with probability long_fraction a
// sample is drawn uniformly from [long_min, long_max], else from
// [short_min, short_max]. Output is a function of the options alone: the same
// seed gives the same bytes (SplitMix64, one stream per sample).
#ifndef SKRULL_TRAINER_DATA_KEY_RETRIEVAL_H_
#define SKRULL_TRAINER_DATA_KEY_RETRIEVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/data/byte_tokenizer.h"

namespace skrull::data {

struct KeyRetrievalOptions {
  int64_t n = 2000;  // samples
  uint64_t seed = 0;
  int64_t short_min_tokens = 64;
  int64_t short_max_tokens = 512;
  int64_t long_min_tokens = 2048;
  int64_t long_max_tokens = 6144;
  double long_fraction = 0.05;  // in [0, 1]
  api::DataFormat format = api::DataFormat::kTokenizedJsonl;
};

// The shortest sample the template allows (filler of 8 bytes).
int64_t KeyRetrievalMinTokens();

// Every problem at once, each naming its flag: "--short-min: must be >= 45 (got 10)".
Status ValidateKeyRetrievalOptions(const KeyRetrievalOptions& options);

struct KeyRetrievalSample {
  std::string context;  // the user turn
  std::string answer;   // the assistant turn: "key=" + key
  std::string key;      // 3 uppercase letters
  bool is_long = false;
  int64_t tokens = 0;  // encoded length, exactly the drawn length
};

// Sample `index` (0-based) of the data set. Depends only on (options, index).
// REQUIRES: ValidateKeyRetrievalOptions(options).ok().
KeyRetrievalSample MakeKeyRetrievalSample(const KeyRetrievalOptions& options, int64_t index);

// [user: context, assistant: answer].
std::vector<ChatMessage> KeyRetrievalMessages(const KeyRetrievalSample& sample);

// One JSONL line (no newline): text-jsonl {"messages": [...]} or
// tokenized-jsonl {"input_ids": [...], "labels": [...]}; both encode to the
// same tokens and labels.
std::string KeyRetrievalLine(const KeyRetrievalSample& sample, api::DataFormat format);

struct KeyRetrievalSummary {
  int64_t samples = 0;
  int64_t long_samples = 0;
  int64_t total_tokens = 0;
  int64_t max_tokens = 0;
  int64_t bytes = 0;  // file size
};

// Validates, then writes options.n lines to `path` atomically (parent
// directories are created).
StatusOr<KeyRetrievalSummary> WriteKeyRetrievalData(const KeyRetrievalOptions& options,
                                                    const std::string& path);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_KEY_RETRIEVAL_H_
