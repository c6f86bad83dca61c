// The length index cache of text-jsonl data sets (DatasetOptions::cache_index).
//
// File PATH.skrull-index, little-endian:
//   "SKRULLIX" u32 version u64 key u64 n_entries, 9 x i64 DatasetStats counts,
//   n_entries x (i64 offset, i64 line, u32 bytes, i32 tokens, i32 label_tokens)
// The key hashes (XXH3) the data file's bytes, the tokenizer's fingerprint
// (its files and chat template) and every option that changes the index, so
// a changed input never reuses a stale index. A file that does not match in
// any way is ignored and rebuilt.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <xxhash.h>

#include "common/file_util.h"
#include "tokenizer/text_encoder.h"
#include "trainer/data/dataset.h"

namespace skrull::data {
namespace {

constexpr char kMagic[8] = {'S', 'K', 'R', 'U', 'L', 'L', 'I', 'X'};
constexpr uint32_t kVersion = 1;
constexpr size_t kEntryBytes = 8 + 8 + 4 + 4 + 4;
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 8 + 9 * 8;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <typename T>
T Take(const std::string& in, size_t* at) {
  T v;
  std::memcpy(&v, in.data() + *at, sizeof(v));
  *at += sizeof(v);
  return v;
}

int64_t* StatsFields(DatasetStats* s, size_t i) {
  int64_t* fields[] = {&s->lines,
                       &s->blank_lines,
                       &s->samples,
                       &s->skipped_malformed,
                       &s->skipped_over_length,
                       &s->truncated,
                       &s->total_tokens,
                       &s->label_tokens,
                       &s->max_length};
  return fields[i];
}

}  // namespace

StatusOr<uint64_t> Dataset::IndexKey() const {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  auto mix = [&](const std::string& s) {
    const uint64_t n = s.size();
    XXH3_64bits_update(state, &n, sizeof(n));
    XXH3_64bits_update(state, s.data(), s.size());
  };
  mix("skrull-index-" + std::to_string(kVersion));
  mix(encoder_ ? encoder_->fingerprint() : "byte-tokenizer");
  mix(std::to_string(static_cast<int>(options_.format)) + "/" +
      std::to_string(options_.max_length_tokens) + "/" +
      std::to_string(static_cast<int>(options_.over_length)) + "/" +
      std::to_string(static_cast<int>(options_.malformed)) + "/" +
      std::to_string(options_.vocab_size));
  for (const auto& [key, name] : options_.fields) mix(key + "=" + name);
  std::vector<char> buffer(1 << 20);
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd_, buffer.data(), buffer.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      XXH3_freeState(state);
      return IoError(options_.path + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    XXH3_64bits_update(state, buffer.data(), static_cast<size_t>(n));
    at += n;
  }
  const uint64_t key = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return key;
}

bool Dataset::LoadIndex(uint64_t key) {
  auto file = ReadFileToString(IndexCachePath());
  if (!file.ok() || file->size() < kHeaderBytes ||
      std::memcmp(file->data(), kMagic, sizeof(kMagic)) != 0) {
    return false;
  }
  size_t at = sizeof(kMagic);
  if (Take<uint32_t>(*file, &at) != kVersion || Take<uint64_t>(*file, &at) != key) return false;
  const uint64_t n = Take<uint64_t>(*file, &at);
  if (n == 0 || (file->size() - kHeaderBytes) / kEntryBytes != n ||
      (file->size() - kHeaderBytes) % kEntryBytes != 0) {
    return false;
  }
  DatasetStats stats;
  for (size_t i = 0; i < 9; ++i) *StatsFields(&stats, i) = Take<int64_t>(*file, &at);
  std::vector<Entry> index(n);
  for (Entry& e : index) {
    e.offset = Take<int64_t>(*file, &at);
    e.line = Take<int64_t>(*file, &at);
    e.bytes = Take<uint32_t>(*file, &at);
    e.tokens = Take<int32_t>(*file, &at);
    e.label_tokens = Take<int32_t>(*file, &at);
    if (e.offset < 0 || e.tokens <= 0 || e.label_tokens < 0) return false;
  }
  if (stats.samples != static_cast<int64_t>(n)) return false;
  index_ = std::move(index);
  stats_ = stats;
  stats_.index_cache = "loaded from " + IndexCachePath();
  return true;
}

Status Dataset::SaveIndex(uint64_t key) const {
  std::string out;
  out.reserve(kHeaderBytes + index_.size() * kEntryBytes);
  out.append(kMagic, sizeof(kMagic));
  Put(&out, kVersion);
  Put(&out, key);
  Put(&out, static_cast<uint64_t>(index_.size()));
  DatasetStats stats = stats_;
  for (size_t i = 0; i < 9; ++i) Put(&out, *StatsFields(&stats, i));
  for (const Entry& e : index_) {
    Put(&out, e.offset);
    Put(&out, e.line);
    Put(&out, e.bytes);
    Put(&out, e.tokens);
    Put(&out, e.label_tokens);
  }
  return WriteFileAtomically(IndexCachePath(), out);
}

}  // namespace skrull::data
