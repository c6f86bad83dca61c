#include "trainer/data/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>

#include "tokenizer/text_encoder.h"
#include "trainer/data/byte_tokenizer.h"
#include "trainer/data/jsonl_record.h"
#include "trainer/data/line_reader.h"
#include "trainer/data/parallel_parse.h"
#include "trainer/data/record_format.h"

namespace skrull::data {

namespace {

Status ParseLine(const DatasetOptions& options, const tokenizer::TextEncoder* encoder,
                 std::string_view line, TokenRecord* record) {
  if (NeedsRewrite(options.format, options.fields)) {
    SKRULL_ASSIGN_OR_RETURN(std::string text,
                            RewriteAsTextRecord(line, options.format, options.fields));
    return ParseTextLine(text, record, encoder, options.vocab_size);
  }
  if (api::IsTextFormat(options.format)) {
    return ParseTextLine(line, record, encoder, options.vocab_size);
  }
  return ParseTokenizedLine(line, options.vocab_size, record);
}

bool IsBlank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

const char* FormatName(api::DataFormat f) {
  switch (f) {
    case api::DataFormat::kTokenizedJsonl:
      return "tokenized-jsonl";
    case api::DataFormat::kTextJsonl:
      return "text-jsonl";
    case api::DataFormat::kAlpaca:
      return "alpaca";
    case api::DataFormat::kShareGpt:
      return "sharegpt";
  }
  return "?";
}

Status ValidateOptions(const DatasetOptions& o) {
  std::vector<std::string> problems;
  if (o.path.empty()) problems.push_back("spec.data.path: is empty; name a .jsonl file");
  if (o.max_length_tokens < 0) {
    problems.push_back("spec.data.maxLength: must be >= 0 (0 = no limit), got " +
                       std::to_string(o.max_length_tokens));
  }
  if (o.max_length_tokens > std::numeric_limits<int32_t>::max()) {
    problems.push_back("spec.data.maxLength: must be < 2^31, got " +
                       std::to_string(o.max_length_tokens));
  }
  if (o.max_line_bytes < 1 || o.max_line_bytes > std::numeric_limits<uint32_t>::max()) {
    problems.push_back("spec.data.maxLineBytes: must be in [1, " +
                       std::to_string(std::numeric_limits<uint32_t>::max()) + "] (default " +
                       std::to_string(kDefaultMaxLineBytes) + "), got " +
                       std::to_string(o.max_line_bytes));
  }
  if (o.vocab_size < 0) {
    problems.push_back("vocab_size: must be >= 0 (0 = unchecked), got " +
                       std::to_string(o.vocab_size));
  }
  if (api::IsTextFormat(o.format) && o.tokenizer.empty() && o.vocab_size > 0 &&
      o.vocab_size < kByteVocabSize) {
    problems.push_back(std::string("spec.data.format: ") + FormatName(o.format) +
                       " uses the byte tokenizer (256 ids) but the "
                       "model's vocab_size is " +
                       std::to_string(o.vocab_size) +
                       "; use a model with vocab_size >= 256 or pre-tokenized data "
                       "(tokenized-jsonl)");
  }
  if (problems.empty()) return OkStatus();
  std::string msg = "invalid data options:";
  for (const auto& p : problems) msg += "\n  " + p;
  return InvalidArgumentError(msg);
}

// Collects problem lines while the whole file is read.
class ProblemList {
 public:
  explicit ProblemList(int max_shown) : max_shown_(std::max(max_shown, 0)) {}
  void Add(std::string message) {
    if (static_cast<int>(shown_.size()) < max_shown_) shown_.push_back(std::move(message));
    ++count_;
  }
  int64_t count() const { return count_; }
  void AppendTo(std::string* out) const {
    for (const auto& m : shown_) *out += "\n  " + m;
    if (count_ > static_cast<int64_t>(shown_.size())) {
      *out +=
          "\n  ... and " + std::to_string(count_ - static_cast<int64_t>(shown_.size())) + " more";
    }
  }

 private:
  int max_shown_;
  std::vector<std::string> shown_;
  int64_t count_ = 0;
};

std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

DatasetOptions DatasetOptionsFromSpec(const api::DataSpec& spec, int32_t vocab_size) {
  DatasetOptions o;
  o.path = spec.path;
  o.format = spec.format;
  o.max_length_tokens = spec.max_length_tokens;
  o.over_length = spec.over_length;
  o.malformed = spec.malformed;
  o.vocab_size = vocab_size;
  o.tokenizer = spec.tokenizer;
  o.chat_template = spec.chat_template;
  static_assert(api::kDefaultTemplateMaxBytes == jinja::RenderLimits::kDefaultMaxBytes &&
                    api::kDefaultTemplateMaxSteps == jinja::RenderLimits::kDefaultMaxSteps &&
                    api::kDefaultTemplateMaxSeconds == jinja::RenderLimits::kDefaultMaxSeconds,
                "spec.data.templateMax* defaults differ from the renderer's");
  o.template_limits = {spec.template_max_bytes, spec.template_max_steps, spec.template_max_seconds};
  o.max_line_bytes = spec.max_line_bytes;
  o.fields = spec.fields;
  return o;
}

std::string StatsSummary(const DatasetStats& s) {
  std::ostringstream os;
  os << s.samples << " samples (" << s.lines << " lines";
  if (s.blank_lines > 0) os << ", " << s.blank_lines << " blank";
  if (s.skipped_malformed > 0) os << ", " << s.skipped_malformed << " malformed skipped";
  if (s.skipped_over_length > 0) os << ", " << s.skipped_over_length << " over-length skipped";
  if (s.truncated > 0) os << ", " << s.truncated << " truncated";
  os << "), " << s.total_tokens << " tokens (" << s.label_tokens << " with loss), longest "
     << s.max_length;
  if (!s.index_cache.empty()) os << "; index " << s.index_cache;
  return os.str();
}

Dataset::Dataset(DatasetOptions options, int fd) : options_(std::move(options)), fd_(fd) {}

Dataset::~Dataset() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::unique_ptr<Dataset>> Dataset::Open(const DatasetOptions& options) {
  SKRULL_RETURN_IF_ERROR(ValidateOptions(options));
  const std::string& path = options.path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFoundError(path + ": no such file; check spec.data.path");
    return IoError(path + ": cannot open: " + std::strerror(err));
  }
  std::unique_ptr<Dataset> ds(new Dataset(options, fd));
  if (api::IsTextFormat(options.format) && !options.tokenizer.empty()) {
    auto encoder = tokenizer::TextEncoder::Load(
        {options.tokenizer, options.chat_template, options.template_limits});
    if (!encoder.ok()) return encoder.status().WithContext("spec.data.tokenizer");
    ds->encoder_ = std::move(*encoder);
  }
  struct stat st;
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (stat_ok && S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(path + ": is a directory; spec.data.path must name a .jsonl file");
  }

  // The cache key hashes every byte, so only a regular file (which ends) is cached.
  const bool cache =
      options.cache_index && api::IsTextFormat(options.format) && stat_ok && S_ISREG(st.st_mode);
  uint64_t key = 0;
  if (cache) {
    SKRULL_ASSIGN_OR_RETURN(key, ds->IndexKey());
    if (ds->LoadIndex(key)) return ds;
  }
  const auto started = std::chrono::steady_clock::now();
  const int64_t max_len = options.max_length_tokens;
  DatasetStats& stats = ds->stats_;
  ProblemList malformed(options.max_reported_problems);
  ProblemList over_length(options.max_reported_problems);
  int64_t longest_over = 0;
  LineReader reader(fd, path, static_cast<size_t>(options.max_line_bytes));
  BatchParser parser(
      [&](std::string_view text, TokenRecord* r) {
        return ParseLine(options, ds->encoder_.get(), text, r);
      },
      IndexThreads(options.threads));
  std::string_view line;
  int64_t offset = 0;
  int64_t number = 0;
  bool more = true;
  while (more) {
    SKRULL_ASSIGN_OR_RETURN(more, reader.Next(&line, &offset, &number));
    if (more) {
      using Kind = QueuedLine::Kind;
      const Kind kind = IsBlank(line)                                        ? Kind::kBlank
                        : line.size() > std::numeric_limits<uint32_t>::max() ? Kind::kTooLong
                                                                             : Kind::kParse;
      parser.Add(line, offset, number, kind);
      if (!parser.Full()) continue;
    }
    parser.Run();
    for (const QueuedLine& queued : parser.lines()) {
      ++stats.lines;
      if (queued.kind == QueuedLine::Kind::kBlank) {
        ++stats.blank_lines;
        continue;
      }
      const std::string where = path + ":" + std::to_string(queued.number);
      if (queued.kind == QueuedLine::Kind::kTooLong) {
        malformed.Add(where + ": line is over 4 GiB");
        continue;
      }
      const Status& parsed = queued.status;
      const TokenRecord& record = queued.record;
      if (!parsed.ok()) {
        if (options.malformed == api::MalformedPolicy::kSkip) {
          ++stats.skipped_malformed;
        } else {
          malformed.Add(where + ": " + parsed.message());
        }
        continue;
      }
      int64_t tokens = static_cast<int64_t>(record.input_ids.size());
      if (max_len > 0 && tokens > max_len) {
        switch (options.over_length) {
          case api::OverLengthPolicy::kError:
            over_length.Add(where + ": sample is " + std::to_string(tokens) +
                            " tokens, over the limit of " + std::to_string(max_len));
            longest_over = std::max(longest_over, tokens);
            continue;
          case api::OverLengthPolicy::kSkip:
            ++stats.skipped_over_length;
            continue;
          case api::OverLengthPolicy::kTruncate:
            ++stats.truncated;
            tokens = max_len;
            break;
        }
      }
      if (tokens > std::numeric_limits<int32_t>::max()) {
        malformed.Add(where + ": sample has " + std::to_string(tokens) +
                      " tokens, over 2^31; set spec.data.maxLength");
        continue;
      }
      Entry e;
      e.offset = queued.offset;
      e.line = queued.number;
      e.bytes = static_cast<uint32_t>(queued.bytes);
      e.tokens = static_cast<int32_t>(tokens);
      e.label_tokens = static_cast<int32_t>(ShiftedLabelTokens(tokens, record.labels));
      ds->index_.push_back(e);
      ++stats.samples;
      stats.total_tokens += tokens;
      stats.label_tokens += e.label_tokens;
      stats.max_length = std::max(stats.max_length, tokens);
    }
    parser.Clear();
  }

  if (malformed.count() > 0 || over_length.count() > 0) {
    std::string msg = path + " (" + FormatName(options.format) + "):";
    if (malformed.count() > 0) {
      msg += " " + Plural(malformed.count(), "malformed line", "malformed lines") +
             "; fix them, or set spec.data.onMalformed: skip to skip and count them:";
      malformed.AppendTo(&msg);
    }
    if (over_length.count() > 0) {
      if (malformed.count() > 0) msg += "\n";
      msg += " " + Plural(over_length.count(), "sample is", "samples are") + " longer than " +
             "spec.data.maxLength = " + std::to_string(max_len) + " tokens (longest " +
             std::to_string(longest_over) +
             "); set spec.data.onOverLength: truncate or skip, or raise "
             "spec.data.maxLength:";
      over_length.AppendTo(&msg);
    }
    return malformed.count() > 0 ? InvalidArgumentError(msg) : FailedPreconditionError(msg);
  }
  if (stats.samples == 0) {
    return InvalidArgumentError(path + ": no usable samples (" + StatsSummary(stats) +
                                "); the data set is empty");
  }
  if (stats.label_tokens == 0) {
    return InvalidArgumentError(path + ": no token carries loss (every target is -100; " +
                                StatsSummary(stats) +
                                "); labels mask everything, so there is nothing to learn");
  }
  if (cache) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char took[32];
    std::snprintf(took, sizeof(took), "%.1f s", seconds);
    Status saved = ds->SaveIndex(key);
    stats.index_cache =
        std::string("built in ") + took + " (" + std::to_string(IndexThreads(options.threads)) +
        " threads); " +
        (saved.ok() ? "cached in " + ds->IndexCachePath() : "not cached: " + saved.message());
  }
  return ds;
}

const Dataset::Entry& Dataset::At(int64_t i) const {
  SKRULL_CHECK(i >= 0 && i < size()) << "sample " << i << " of " << size();
  return index_[static_cast<size_t>(i)];
}

int64_t Dataset::Length(int64_t i) const { return At(i).tokens; }

int64_t Dataset::LabelTokenCount(int64_t i) const { return At(i).label_tokens; }

std::string Dataset::Location(int64_t i) const {
  return options_.path + ":" + std::to_string(At(i).line);
}

StatusOr<Sample> Dataset::Get(int64_t i) const {
  const Entry& e = At(i);
  std::string buf(e.bytes, '\0');
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::pread(fd_, buf.data() + done, buf.size() - done,
                        static_cast<off_t>(e.offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(Location(i) + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  auto changed = [&](const std::string& why) {
    return FailedPreconditionError(Location(i) + ": changed since the data set was indexed (" +
                                   why + "); do not modify the data file while training");
  };
  if (done != buf.size()) return changed("file is shorter");
  TokenRecord record;
  Status parsed = ParseLine(options_, encoder_.get(), buf, &record);
  if (!parsed.ok()) return changed(parsed.message());
  const int64_t n = static_cast<int64_t>(record.input_ids.size());
  const bool truncate = options_.over_length == api::OverLengthPolicy::kTruncate &&
                        options_.max_length_tokens > 0 && n > options_.max_length_tokens;
  if ((truncate ? options_.max_length_tokens : n) != e.tokens) {
    return changed("now " + std::to_string(n) + " tokens, indexed " + std::to_string(e.tokens));
  }
  record.input_ids.resize(static_cast<size_t>(e.tokens));
  if (!record.labels.empty()) record.labels.resize(static_cast<size_t>(e.tokens));
  Sample sample = MakeShiftedSample(std::move(record.input_ids), record.labels);
  if (LabelTokens(sample) != e.label_tokens) return changed("labels differ");
  return sample;
}

}  // namespace skrull::data
