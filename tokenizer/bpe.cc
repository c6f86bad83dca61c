#include "tokenizer/bpe.h"

#include <atomic>
#include <queue>
#include <utility>

#include "common/json_fields.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_internal.h"

namespace skrull::tokenizer {
namespace {

// Pieces longer than this are not cached (Hugging Face caches words under 256
// characters too); the cache is cleared when it reaches kCacheEntries.
constexpr size_t kCacheMaxBytes = 256;
constexpr size_t kCacheEntries = 1 << 16;

struct ThreadCache {
  uint64_t owner = 0;
  std::unordered_map<std::string, std::vector<int32_t>> entries;
};

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status CheckOptions(const JsonFields& f, const nlohmann::json& model) {
  SKRULL_ASSIGN_OR_RETURN(const std::string type, f.OptionalString("type", "BPE"));
  if (type != "BPE") {
    return f.Error("type", "\"" + type +
                               "\" is not supported (supported: byte-level BPE, as Qwen2 and "
                               "Llama-3 use)");
  }
  for (const char* key : {"dropout", "byte_fallback", "continuing_subword_prefix",
                          "end_of_word_suffix", "fuse_unk"}) {
    auto it = model.find(key);
    if (it == model.end() || it->is_null() ||
        (it->is_string() && it->get_ref<const std::string&>().empty()) ||
        (it->is_boolean() && !it->get<bool>())) {
      continue;
    }
    return f.Error(key, "is not supported by this byte-level BPE (it must be null, false or empty)",
                   &*it);
  }
  return OkStatus();
}

// "a b" (tokenizers < 0.20) or ["a", "b"].
Status SplitMerge(const nlohmann::json& m, size_t rank, std::string* a, std::string* b) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      return InvalidArgumentError("model.merges[" + std::to_string(rank) + "] = " + Quote(s) +
                                  ": expected two tokens separated by one space");
    }
    *a = s.substr(0, space);
    *b = s.substr(space + 1);
    return OkStatus();
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    *a = m[0].get<std::string>();
    *b = m[1].get<std::string>();
    return OkStatus();
  }
  return InvalidArgumentError("model.merges[" + std::to_string(rank) +
                              "]: expected \"a b\" or [\"a\", \"b\"]");
}

}  // namespace

StatusOr<std::unique_ptr<Bpe>> Bpe::FromJson(const nlohmann::json& model, int32_t id_bound) {
  const JsonFields f(model, "", "model");
  SKRULL_RETURN_IF_ERROR(CheckOptions(f, model));
  SKRULL_ASSIGN_OR_RETURN(const nlohmann::json* vocab, f.RequiredObject("vocab"));  // token -> id
  SKRULL_ASSIGN_OR_RETURN(const nlohmann::json* merges_json, f.RequiredArray("merges"));
  std::unique_ptr<Bpe> bpe(new Bpe());
  static std::atomic<uint64_t> next_instance{1};
  bpe->instance_ = next_instance.fetch_add(1);
  SKRULL_ASSIGN_OR_RETURN(bpe->ignore_merges_, f.OptionalBool("ignore_merges", false));
  bpe->byte_ids_.fill(-1);
  std::unordered_map<std::string, int32_t> by_text;  // byte-level spelling -> id
  by_text.reserve(vocab->size());
  bpe->vocab_.reserve(vocab->size());
  for (const auto& [text, id] : vocab->items()) {
    if (!IsIdBelow(id, id_bound)) {
      return f.Error("vocab[" + Quote(text) + "]",
                     "ids must be integers in " + IdBoundText(id_bound), &id);
    }
    const auto value = id.get<int32_t>();
    by_text.emplace(text, value);
    // Keys outside the byte-level alphabet cannot come out of ByteLevel
    // pre-tokenization; they keep their id but no byte spelling.
    std::optional<std::string> bytes = DecodeByteLevel(text);
    if (static_cast<size_t>(value) >= bpe->token_bytes_.size()) {
      bpe->token_bytes_.resize(static_cast<size_t>(value) + 1, 0);
    }
    if (!bytes) continue;
    bpe->token_bytes_[static_cast<size_t>(value)] = static_cast<uint32_t>(bytes->size());
    if (bytes->size() == 1) bpe->byte_ids_[static_cast<unsigned char>((*bytes)[0])] = value;
    bpe->vocab_.emplace(std::move(*bytes), value);
  }
  for (int b = 0; b < 256; ++b) {
    if (bpe->byte_ids_[b] < 0) {
      return InvalidArgumentError(
          "model.vocab has no token for byte " + std::to_string(b) + " (" +
          Quote(EncodeByteLevel(std::string(1, static_cast<char>(b)))) +
          "); only byte-level BPE vocabularies (all 256 byte tokens) are supported");
    }
  }
  const auto& merges = *merges_json;
  bpe->merges_.reserve(merges.size());
  std::string a, b;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    SKRULL_RETURN_IF_ERROR(SplitMerge(merges[rank], rank, &a, &b));
    auto ia = by_text.find(a);
    auto ib = by_text.find(b);
    auto iab = by_text.find(a + b);
    if (ia == by_text.end() || ib == by_text.end() || iab == by_text.end()) {
      const std::string& missing = ia == by_text.end() ? a : ib == by_text.end() ? b : a + b;
      return InvalidArgumentError("model.merges[" + std::to_string(rank) + "] (" + Quote(a) + ", " +
                                  Quote(b) + "): token " + Quote(missing) +
                                  " is not in model.vocab");
    }
    // A later duplicate replaces an earlier one, as in Hugging Face's map.
    bpe->merges_[PairKey(ia->second, ib->second)] = {static_cast<int32_t>(rank), iab->second};
  }
  return bpe;
}

std::optional<int32_t> Bpe::Find(std::string_view bytes) const {
  auto it = vocab_.find(std::string(bytes));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

uint32_t Bpe::TokenBytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= token_bytes_.size()) return 0;
  return token_bytes_[static_cast<size_t>(id)];
}

const Bpe::Merge* Bpe::FindMerge(int32_t a, int32_t b) const {
  auto it = merges_.find(PairKey(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void Bpe::MergeBytes(std::string_view bytes, std::vector<int32_t>* ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  const auto n = static_cast<int32_t>(bytes.size());
  std::vector<Symbol> symbols(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids_[static_cast<unsigned char>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1,
                  true};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const Merge* m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
      queue.push({m->rank, i, m->id});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const Merge* current = FindMerge(left.id, right.id);
    if (current == nullptr || current->id != top.id) continue;  // stale entry
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const Merge* m = FindMerge(symbols[left.prev].id, left.id)) {
        queue.push({m->rank, left.prev, m->id});
      }
    }
    if (left.next >= 0) {
      if (const Merge* m = FindMerge(left.id, symbols[left.next].id)) {
        queue.push({m->rank, top.pos, m->id});
      }
    }
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) ids->push_back(symbols[i].id);
}

void Bpe::Encode(std::string_view bytes, std::vector<int32_t>* ids) const {
  if (bytes.empty()) return;
  if (bytes.size() == 1) {
    ids->push_back(byte_ids_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  if (bytes.size() > kCacheMaxBytes) {
    if (ignore_merges_) {
      if (auto id = Find(bytes)) {
        ids->push_back(*id);
        return;
      }
    }
    MergeBytes(bytes, ids);
    return;
  }
  thread_local ThreadCache cache;
  if (cache.owner != instance_) {
    cache.entries.clear();
    cache.owner = instance_;
  }
  std::string key(bytes);
  auto hit = cache.entries.find(key);
  if (hit != cache.entries.end()) {
    ids->insert(ids->end(), hit->second.begin(), hit->second.end());
    return;
  }
  std::vector<int32_t> result;
  auto whole = ignore_merges_ ? vocab_.find(key) : vocab_.end();
  if (whole != vocab_.end()) {
    result.push_back(whole->second);
  } else {
    MergeBytes(bytes, &result);
  }
  ids->insert(ids->end(), result.begin(), result.end());
  if (cache.entries.size() >= kCacheEntries) cache.entries.clear();
  cache.entries.emplace(std::move(key), std::move(result));
}

}  // namespace skrull::tokenizer
