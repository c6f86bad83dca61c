// Dataset: a JSONL file of SFT samples, indexed once up front.
//
// Open() streams the file once (constant memory beyond the index) and records,
// for every usable line, its byte offset, its token length (after truncation)
// and its label-token count. So the scheduler sees every sample's length, and
// the loss its global label-token count, before any sample is built. Get(i)
// reads and parses that one line again.
//
// Formats (api::DataFormat):
//   tokenized-jsonl  {"input_ids": [ints], "labels": [ints]}; labels are
//                    optional (absent or null = every token is a label),
//                    unshifted, -100 masks a token; other keys are ignored.
//   alpaca, sharegpt and text-jsonl with spec.data.fields: rewritten as a
//                    text-jsonl record first (record_format.h).
//   text-jsonl       {"text": "..."} or {"messages": [{"role":
//                    "system|user|assistant", "content": "..."}]}, encoded by
//                    the Hugging Face tokenizer in `tokenizer` (model's chat
//                    template; tokenizer/text_encoder.h), or without one by
//                    the byte tokenizer (byte_tokenizer.h: vocab 256). Loss on
//                    assistant content only.
// Blank lines (only whitespace) are ignored: counted in `lines`, not samples.
//
// Problems name FILE:LINE, what is wrong and the fix:
//   malformed line (bad JSON, missing input_ids, non-integer ids, labels
//   length mismatch, empty sample, id outside [0, vocab_size), ...):
//     MalformedPolicy::kError -> Open fails (InvalidArgument); kSkip -> the
//     line is skipped and counted.
//   over-length sample (tokens > max_length_tokens):
//     OverLengthPolicy::kError -> Open fails (FailedPrecondition); kTruncate ->
//     the first max_length_tokens tokens are kept (the last kept position gets
//     no target); kSkip -> skipped and counted.
//   line longer than max_line_bytes (a file that is not JSONL, /dev/zero):
//     Open fails at once (InvalidArgument naming FILE:LINE, the cap and
//     spec.data.maxLineBytes) whatever the policies, after reading at most
//     about the cap; a line that long cannot be skipped without reading it.
// Lines nested deeper than kMaxJsonDepth (json_depth.h) are malformed.
// Open reads the whole file before failing and reports the first
// `max_reported_problems` problems plus the total count.
#ifndef SKRULL_TRAINER_DATA_DATASET_H_
#define SKRULL_TRAINER_DATA_DATASET_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "tokenizer/jinja/budget.h"
#include "trainer/data/sample.h"

namespace skrull::tokenizer {
class TextEncoder;
}  // namespace skrull::tokenizer

namespace skrull::data {

// Longest line Open reads (DatasetOptions::max_line_bytes): the default of
// spec.data.maxLineBytes, 64 MiB.
inline constexpr int64_t kDefaultMaxLineBytes = api::kDefaultMaxLineBytes;

struct DatasetOptions {
  std::string path;  // a .jsonl file
  api::DataFormat format = api::DataFormat::kTokenizedJsonl;
  // Longest sample in tokens; 0 = no limit here.
  int64_t max_length_tokens = 0;
  api::OverLengthPolicy over_length = api::OverLengthPolicy::kError;
  api::MalformedPolicy malformed = api::MalformedPolicy::kError;
  // The model's vocabulary size. tokenized-jsonl: ids and labels must be in
  // [0, vocab_size); 0 = not checked. text-jsonl: must be 0 or >= 256 (the
  // byte tokenizer's vocabulary).
  int32_t vocab_size = 0;
  // Longest line in bytes (without its newline), in [1, 2^32); a longer line
  // fails Open. Bounds the memory one line may take (spec.data.maxLineBytes).
  int64_t max_line_bytes = kDefaultMaxLineBytes;
  // How many problem lines an error message lists before "... and N more".
  int max_reported_problems = 10;
  // text-jsonl: a tokenizer.json or model folder ("" = the byte tokenizer),
  // and a chat template replacing the model's ("" = the model's).
  std::string tokenizer;
  std::string chat_template;
  // alpaca, sharegpt, text-jsonl: standard field name -> the name the file
  // uses (spec.data.fields; record_format.h).
  std::map<std::string, std::string> fields;
  // The work budget of rendering one line's chat (spec.data.templateMax*).
  jinja::RenderLimits template_limits{};
  // Threads that parse lines while indexing; 0 = one per core.
  int threads = 0;
  // text-jsonl: keep the index in PATH.skrull-index (regular files only),
  // keyed by a hash of the data file's bytes, the tokenizer files, the chat template and the
  // options above, so a later Open with the same inputs skips tokenizing.
  bool cache_index = true;
};

// Maps the job's data section; vocab_size comes from the model config.
DatasetOptions DatasetOptionsFromSpec(const api::DataSpec& spec, int32_t vocab_size);

struct DatasetStats {
  int64_t lines = 0;                // lines read, blank ones included
  int64_t blank_lines = 0;          // whitespace-only lines (ignored)
  int64_t samples = 0;              // usable samples (== Dataset::size())
  int64_t skipped_malformed = 0;    // with MalformedPolicy::kSkip
  int64_t skipped_over_length = 0;  // with OverLengthPolicy::kSkip
  int64_t truncated = 0;            // with OverLengthPolicy::kTruncate
  int64_t total_tokens = 0;         // sum of sample lengths (after truncation)
  int64_t label_tokens = 0;         // sum of LabelTokens over samples
  int64_t max_length = 0;           // longest sample in tokens (after truncation)
  std::string index_cache;          // text-jsonl: how the index cache was used
};

// "N samples (L lines; ...), T tokens (X with loss), longest M" for logs.
std::string StatsSummary(const DatasetStats& stats);

class Dataset {
 public:
  // Indexes `options.path`. Errors: NotFound / IoError for the file,
  // InvalidArgument for malformed lines (kError), FailedPrecondition for
  // over-length samples (kError), InvalidArgument when no usable sample or no
  // label token is left.
  static StatusOr<std::unique_ptr<Dataset>> Open(const DatasetOptions& options);

  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  // Number of usable samples; indices are 0..size()-1 in file order.
  int64_t size() const { return static_cast<int64_t>(index_.size()); }

  // REQUIRES: 0 <= i < size() (all accessors below).
  // Tokens of sample i after truncation.
  int64_t Length(int64_t i) const;
  // LabelTokens(Get(i)), from the index.
  int64_t LabelTokenCount(int64_t i) const;
  // "FILE:LINE" of sample i, for messages.
  std::string Location(int64_t i) const;

  // Reads, parses and builds sample i (shifted targets, truncated as indexed).
  // Fails (FailedPrecondition, naming FILE:LINE) if the line no longer parses
  // to what was indexed, i.e. the file changed after Open.
  // Thread safety: safe to call concurrently (positional reads).
  StatusOr<Sample> Get(int64_t i) const;

  const DatasetStats& stats() const { return stats_; }
  const DatasetOptions& options() const { return options_; }

 private:
  struct Entry {
    int64_t offset;        // byte offset of the line in the file
    int64_t line;          // 1-based line number
    uint32_t bytes;        // line length without the newline
    int32_t tokens;        // after truncation
    int32_t label_tokens;  // after truncation and shifting
  };
  class Indexer;

  explicit Dataset(DatasetOptions options, int fd);
  const Entry& At(int64_t i) const;
  // The index cache (index_cache.cc).
  std::string IndexCachePath() const { return options_.path + ".skrull-index"; }
  StatusOr<uint64_t> IndexKey() const;
  bool LoadIndex(uint64_t key);
  Status SaveIndex(uint64_t key) const;

  DatasetOptions options_;
  std::shared_ptr<const tokenizer::TextEncoder> encoder_;  // text-jsonl with a tokenizer
  int fd_;
  std::vector<Entry> index_;
  DatasetStats stats_;
};

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_DATASET_H_
