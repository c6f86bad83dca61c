#include "trainer/data/key_retrieval.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/data/rng.h"
#include "trainer/data/sample.h"

namespace skrull::data {

namespace {

// Lowercase only: no uppercase letter and no '=' may appear outside the key,
// and "key" is not a filler word.
constexpr const char* kFillerWords[] = {
    "the",     "of",     "and",    "a",     "to",    "in",     "is",    "was",   "it",    "for",
    "on",      "with",   "as",     "at",    "by",    "from",   "this",  "that",  "river", "stone",
    "green",   "quiet",  "old",    "road",  "light", "house",  "cloud", "north", "field", "small",
    "water",   "long",   "bird",   "tree",  "hill",  "window", "paper", "sound", "rain",  "winter",
    "morning", "garden", "slowly", "under", "over",  "near",   "far",   "little"};
constexpr int64_t kFillerWordCount = sizeof(kFillerWords) / sizeof(kFillerWords[0]);

constexpr char kKeyPrefix[] = "key=";
constexpr char kQuestion[] = "\nwhat is the key?";
constexpr int kKeyLetters = 3;
constexpr int64_t kMinFillerBytes = 8;

int64_t Len(const char* s) { return static_cast<int64_t>(std::char_traits<char>::length(s)); }

// Tokens of a sample with a filler of 0 bytes.
int64_t FixedTokens() {
  const int64_t needle = Len(kKeyPrefix) + kKeyLetters + 1;  // "key=XYZ "
  const int64_t user = needle + Len(kQuestion);
  const int64_t answer = Len(kKeyPrefix) + kKeyLetters;
  return kChatPrefixTokens + ChatTurnTokenCount(user) + ChatTurnTokenCount(answer);
}

}  // namespace

int64_t KeyRetrievalMinTokens() { return FixedTokens() + kMinFillerBytes; }

Status ValidateKeyRetrievalOptions(const KeyRetrievalOptions& o) {
  std::vector<std::string> problems;
  const int64_t min_tokens = KeyRetrievalMinTokens();
  auto check_range = [&](const char* lo_flag, int64_t lo, const char* hi_flag, int64_t hi) {
    if (lo < min_tokens) {
      problems.push_back(std::string(lo_flag) + ": must be >= " + std::to_string(min_tokens) +
                         " tokens, the template's minimum (got " + std::to_string(lo) + ")");
    }
    if (hi < lo) {
      problems.push_back(std::string(hi_flag) + ": must be >= " + lo_flag + " (" +
                         std::to_string(lo) + "), got " + std::to_string(hi));
    }
    if (hi > (int64_t{1} << 30)) {
      problems.push_back(std::string(hi_flag) + ": must be <= 2^30 tokens, got " +
                         std::to_string(hi));
    }
  };
  if (o.n < 1) problems.push_back("--n: must be >= 1 (got " + std::to_string(o.n) + ")");
  check_range("--short-min", o.short_min_tokens, "--short-max", o.short_max_tokens);
  check_range("--long-min", o.long_min_tokens, "--long-max", o.long_max_tokens);
  if (!(o.long_fraction >= 0.0 && o.long_fraction <= 1.0)) {
    problems.push_back("--long-fraction: must be in [0, 1] (got " +
                       std::to_string(o.long_fraction) + ")");
  }
  if (problems.empty()) return OkStatus();
  std::string msg = "invalid data generator options:";
  for (const auto& p : problems) msg += "\n  " + p;
  return InvalidArgumentError(msg);
}

KeyRetrievalSample MakeKeyRetrievalSample(const KeyRetrievalOptions& o, int64_t index) {
  SKRULL_CHECK(index >= 0) << index;
  SplitMix64 rng(MixSeed(o.seed, static_cast<uint64_t>(index)));
  KeyRetrievalSample s;
  s.is_long = rng.Unit() < o.long_fraction;
  s.tokens = s.is_long ? rng.Between(o.long_min_tokens, o.long_max_tokens)
                       : rng.Between(o.short_min_tokens, o.short_max_tokens);
  for (int i = 0; i < kKeyLetters; ++i) s.key.push_back(static_cast<char>('A' + rng.Below(26)));
  s.answer = kKeyPrefix + s.key;

  const int64_t filler_bytes = s.tokens - FixedTokens();
  SKRULL_CHECK(filler_bytes >= kMinFillerBytes) << "tokens " << s.tokens;
  std::string filler;
  filler.reserve(static_cast<size_t>(filler_bytes) + 16);
  while (static_cast<int64_t>(filler.size()) < filler_bytes) {
    filler += kFillerWords[rng.Below(kFillerWordCount)];
    filler.push_back(' ');
  }
  filler.resize(static_cast<size_t>(filler_bytes));
  // The needle goes at a word start: offset 0 or just after a space.
  std::vector<size_t> starts = {0};
  for (size_t i = 0; i + 1 < filler.size(); ++i) {
    if (filler[i] == ' ') starts.push_back(i + 1);
  }
  const size_t at = starts[rng.Below(starts.size())];
  s.context = filler.substr(0, at) + kKeyPrefix + s.key + " " + filler.substr(at) + kQuestion;
  return s;
}

std::vector<ChatMessage> KeyRetrievalMessages(const KeyRetrievalSample& s) {
  return {ChatMessage{ChatRole::kUser, s.context}, ChatMessage{ChatRole::kAssistant, s.answer}};
}

std::string KeyRetrievalLine(const KeyRetrievalSample& s, api::DataFormat format) {
  if (format == api::DataFormat::kTextJsonl) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const ChatMessage& m : KeyRetrievalMessages(s)) {
      messages.push_back({{"role", ChatRoleName(m.role)}, {"content", m.content}});
    }
    nlohmann::ordered_json line;
    line["messages"] = std::move(messages);
    return line.dump();
  }
  auto encoded = EncodeChat(KeyRetrievalMessages(s));
  SKRULL_CHECK(encoded.ok()) << encoded.status();
  std::string line = "{\"input_ids\":[";
  line.reserve(encoded->input_ids.size() * 9 + 32);
  for (size_t i = 0; i < encoded->input_ids.size(); ++i) {
    if (i > 0) line.push_back(',');
    line += std::to_string(encoded->input_ids[i]);
  }
  line += "],\"labels\":[";
  for (size_t i = 0; i < encoded->labels.size(); ++i) {
    if (i > 0) line.push_back(',');
    line += std::to_string(encoded->labels[i]);
  }
  line += "]}";
  return line;
}

StatusOr<KeyRetrievalSummary> WriteKeyRetrievalData(const KeyRetrievalOptions& options,
                                                    const std::string& path) {
  SKRULL_RETURN_IF_ERROR(ValidateKeyRetrievalOptions(options));
  KeyRetrievalSummary summary;
  std::string contents;
  for (int64_t i = 0; i < options.n; ++i) {
    KeyRetrievalSample s = MakeKeyRetrievalSample(options, i);
    contents += KeyRetrievalLine(s, options.format);
    contents.push_back('\n');
    ++summary.samples;
    summary.long_samples += s.is_long;
    summary.total_tokens += s.tokens;
    summary.max_tokens = std::max(summary.max_tokens, s.tokens);
  }
  summary.bytes = static_cast<int64_t>(contents.size());
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically(path, contents));
  return summary;
}

}  // namespace skrull::data
