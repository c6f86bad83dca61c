#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <utility>

#include "common/json_fields.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/utf8.h"

namespace skrull::tokenizer {

// A byte trie over token spellings; node 0 is the root.
struct AddedTokens::Trie {
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                       // index into tokens_
  };
  std::vector<Node> nodes{Node{}};
  bool first_byte[256] = {};

  void Add(std::string_view spelling, int32_t token) {
    if (spelling.empty()) return;
    first_byte[static_cast<unsigned char>(spelling[0])] = true;
    int32_t node = 0;
    for (unsigned char c : spelling) {
      auto& kids = nodes[node].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
      if (it != kids.end() && it->first == c) {
        node = it->second;
        continue;
      }
      const auto child = static_cast<int32_t>(nodes.size());
      kids.insert(it, {c, child});
      nodes.emplace_back();
      node = child;
    }
    nodes[node].token = token;
  }

  // The longest token starting at text[at]: (token index, length) or (-1, 0).
  std::pair<int32_t, size_t> Longest(std::string_view text, size_t at) const {
    int32_t node = 0;
    std::pair<int32_t, size_t> best{-1, 0};
    for (size_t i = at; i < text.size(); ++i) {
      const auto& kids = nodes[node].children;
      const auto c = static_cast<unsigned char>(text[i]);
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
      if (it == kids.end() || it->first != c) break;
      node = it->second;
      if (nodes[node].token >= 0) best = {nodes[node].token, i + 1 - at};
    }
    return best;
  }
};

AddedTokens::AddedTokens() = default;
AddedTokens::~AddedTokens() = default;

StatusOr<std::unique_ptr<AddedTokens>> AddedTokens::FromJson(const nlohmann::json& list,
                                                             const Normalizer& normalizer,
                                                             int32_t id_bound) {
  std::unique_ptr<AddedTokens> t(new AddedTokens());
  t->raw_ = std::make_unique<Trie>();
  t->normalized_ = std::make_unique<Trie>();
  if (!list.is_null() && !list.is_array()) {
    return JsonFields(list, "", "added_tokens").Error("", "must be a list", &list);
  }
  for (size_t i = 0; list.is_array() && i < list.size(); ++i) {
    const auto& e = list[i];
    const JsonFields f(e, "", "added_tokens[" + std::to_string(i) + "]");
    if (!e.is_object()) return f.Error("", "must be {\"id\": int, \"content\": string, ...}", &e);
    AddedToken token;
    SKRULL_ASSIGN_OR_RETURN(const int64_t id, f.RequiredInt("id"));
    if (id < 0 || id >= id_bound) {
      return f.Error("id", "must be in " + IdBoundText(id_bound), &e["id"]);
    }
    token.id = static_cast<int32_t>(id);
    SKRULL_ASSIGN_OR_RETURN(token.content, f.RequiredString("content"));
    SKRULL_ASSIGN_OR_RETURN(token.special, f.OptionalBool("special", false));
    SKRULL_ASSIGN_OR_RETURN(token.normalized, f.OptionalBool("normalized", !token.special));
    SKRULL_ASSIGN_OR_RETURN(token.lstrip, f.OptionalBool("lstrip", false));
    SKRULL_ASSIGN_OR_RETURN(token.rstrip, f.OptionalBool("rstrip", false));
    SKRULL_ASSIGN_OR_RETURN(token.single_word, f.OptionalBool("single_word", false));
    if (token.content.empty() || FindInvalidUtf8(token.content) != std::string_view::npos) {
      return f.Error("content", "must be non-empty UTF-8");
    }
    const auto index = static_cast<int32_t>(t->tokens_.size());
    t->by_content_.emplace(token.content, static_cast<size_t>(index));
    t->by_id_.emplace(token.id, static_cast<size_t>(index));
    if (token.normalized) {
      std::string spelled;
      t->normalized_->Add(normalizer.Normalize(token.content, &spelled) ? spelled : token.content,
                          index);
    } else {
      t->raw_->Add(token.content, index);
    }
    t->tokens_.push_back(std::move(token));
  }
  // Rust regex's Unicode \w; \s is rewritten to White_Space by Regex.
  SKRULL_ASSIGN_OR_RETURN(t->word_end_,
                          Regex::Compile(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]\z)"));
  SKRULL_ASSIGN_OR_RETURN(t->word_start_,
                          Regex::Compile(R"(\A[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])"));
  return t;
}

const AddedToken* AddedTokens::FindByContent(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::FindById(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

namespace {

// Unicode White_Space, as Rust regex's \s.
bool IsWhiteSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Start of the whitespace run that ends `text`.
size_t TrailingSpaceStart(std::string_view text) {
  size_t pos = 0, run = 0;
  while (pos < text.size()) {
    if (!IsWhiteSpace(NextCodePoint(text, &pos))) run = pos;
  }
  return run;
}

// Length of the whitespace run that starts `text`.
size_t LeadingSpaceLength(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t at = pos;
    if (!IsWhiteSpace(NextCodePoint(text, &pos))) return at;
  }
  return text.size();
}

}  // namespace

Status AddedTokens::Split(std::string_view text, bool normalized,
                          std::vector<TextSplit>* out) const {
  const Trie& trie = normalized ? *normalized_ : *raw_;
  size_t start_offset = 0;
  size_t i = 0;
  std::vector<std::pair<size_t, size_t>> probe;
  while (i < text.size()) {
    if (!trie.first_byte[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    auto [index, length] = trie.Longest(text, i);
    if (index < 0) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t stop = i + length;
    i = stop;  // matches never overlap, discarded ones included
    const AddedToken& token = tokens_[static_cast<size_t>(index)];
    if (token.single_word) {
      probe.clear();
      SKRULL_RETURN_IF_ERROR(word_end_->FindAll(text.substr(0, start), &probe));
      const bool word_before = !probe.empty();
      probe.clear();
      SKRULL_RETURN_IF_ERROR(word_start_->FindAll(text.substr(stop), &probe));
      if (word_before || !probe.empty()) continue;
    }
    if (token.lstrip) start = std::max(TrailingSpaceStart(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += LeadingSpaceLength(text.substr(stop));
    if (start_offset < start) out->push_back({start_offset, start, -1});
    out->push_back({start, stop, token.id});
    start_offset = stop;
    i = stop;
  }
  if (start_offset < text.size()) out->push_back({start_offset, text.size(), -1});
  return OkStatus();
}

}  // namespace skrull::tokenizer
