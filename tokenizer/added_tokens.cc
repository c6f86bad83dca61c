#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <utility>

#include "common/json_fields.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/utf8.h"

namespace skrull::tokenizer {

// Aho-Corasick automaton over the token spellings, reversed: scanning a text
// from its end, the state after reading byte i names the longest spelling
// that starts at i. One pass finds, for every position, the longest token
// starting there, in time linear in the text (however long or repetitive the
// tokens), which is what leftmost-longest matching needs. Node 0 is the root.
struct AddedTokens::Trie {
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t fail = 0;    // longest proper suffix of this node's path that is a node
    int32_t token = -1;  // index into tokens_ when a spelling ends here
    int32_t out = -1;    // deepest node on the fail chain (itself included) with a token
    uint32_t depth = 0;  // bytes from the root
  };
  std::vector<Node> nodes{Node{}};

  int32_t Child(int32_t node, unsigned char c) const {
    const auto& kids = nodes[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
    return it != kids.end() && it->first == c ? it->second : -1;
  }

  void Add(std::string_view spelling, int32_t token) {
    if (spelling.empty()) return;
    int32_t node = 0;
    for (auto p = spelling.rbegin(); p != spelling.rend(); ++p) {
      const auto c = static_cast<unsigned char>(*p);
      int32_t next = Child(node, c);
      if (next < 0) {
        next = static_cast<int32_t>(nodes.size());
        auto& kids = nodes[node].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1})),
                    {c, next});
        nodes.emplace_back();
        nodes.back().depth = nodes[node].depth + 1;
      }
      node = next;
    }
    nodes[node].token = token;  // a later duplicate replaces an earlier one
  }

  // Fail and output links, breadth first (after the last Add).
  void Build() {
    std::vector<int32_t> queue = {0};
    for (size_t head = 0; head < queue.size(); ++head) {
      const int32_t u = queue[head];
      Node& n = nodes[u];
      n.out = n.token >= 0 ? u : (u == 0 ? -1 : nodes[n.fail].out);
      for (const auto& [c, v] : nodes[u].children) {
        int32_t f = nodes[u].fail;
        int32_t link = -1;
        while (u != 0) {
          link = Child(f, c);
          if (link >= 0 || f == 0) break;
          f = nodes[f].fail;
        }
        nodes[v].fail = u == 0 || link < 0 ? 0 : link;
        queue.push_back(v);
      }
    }
  }

  // (position, node of the token) of the longest token starting at each
  // position that has one, last position first: 8 bytes per match, less than
  // the id and offsets each match becomes. REQUIRES: text < 4 GiB.
  void Scan(std::string_view text, std::vector<std::pair<uint32_t, int32_t>>* found) const {
    int32_t state = 0;
    for (size_t i = text.size(); i-- > 0;) {
      const auto c = static_cast<unsigned char>(text[i]);
      int32_t next = Child(state, c);
      while (next < 0 && state != 0) {
        state = nodes[state].fail;
        next = Child(state, c);
      }
      state = next < 0 ? 0 : next;
      const int32_t out = nodes[state].out;
      if (out >= 0) found->emplace_back(static_cast<uint32_t>(i), out);
    }
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
  t->raw_->Build();
  t->normalized_->Build();
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

// Start of the whitespace run that ends text[0, end), not before `floor`
// (scanning back from `end`: linear in the run).
size_t TrailingSpaceStart(std::string_view text, size_t end, size_t floor) {
  while (end > floor) {
    size_t begin = end - 1;
    while (begin > floor && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
    size_t pos = begin;
    if (!IsWhiteSpace(NextCodePoint(text.substr(0, end), &pos))) break;
    end = begin;
  }
  return end;
}

// The code point that ends text[0, end) (empty at 0) and the one that starts
// text[begin, ...), as byte ranges.
std::string_view LastCodePoint(std::string_view text, size_t end) {
  if (end == 0) return {};
  size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
  return text.substr(begin, end - begin);
}
std::string_view FirstCodePoint(std::string_view text, size_t begin) {
  if (begin >= text.size()) return {};
  size_t end = begin;
  NextCodePoint(text, &end);
  return text.substr(begin, end - begin);
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
  thread_local std::vector<std::pair<uint32_t, int32_t>> found;
  found.clear();
  if (trie.nodes.size() > 1) trie.Scan(text, &found);
  size_t start_offset = 0;
  size_t i = 0;  // matches never overlap, discarded ones included
  std::vector<std::pair<size_t, size_t>> probe;
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    const size_t at = it->first;
    if (at < i) continue;
    const Trie::Node& match = trie.nodes[it->second];
    size_t start = at;
    size_t stop = at + match.depth;
    i = stop;
    const AddedToken& token = tokens_[static_cast<size_t>(match.token)];
    if (token.single_word) {
      // \w just before and just after the match: one code point each.
      probe.clear();
      SKRULL_RETURN_IF_ERROR(word_end_->FindAll(LastCodePoint(text, start), &probe));
      const bool word_before = !probe.empty();
      probe.clear();
      SKRULL_RETURN_IF_ERROR(word_start_->FindAll(FirstCodePoint(text, stop), &probe));
      if (word_before || !probe.empty()) continue;
    }
    if (token.lstrip) start = TrailingSpaceStart(text, start, start_offset);
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
