#include "tokenizer/pre_tokenizer.h"

#include <utility>

#include "common/json_fields.h"
#include "tokenizer/tokenizer_internal.h"

namespace skrull::tokenizer {

namespace {

// The pattern ByteLevel uses when use_regex is true (GPT-2).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Range {
  size_t begin;
  size_t end;
  bool flag;  // is a match (before applying the behaviour) / is removed (after)
};

// Hugging Face's NormalizedString::split: matches and gaps -> kept ranges.
std::vector<Range> ApplyBehavior(std::vector<Range> splits, Behavior behavior) {
  std::vector<Range> out;
  bool previous = false;
  switch (behavior) {
    case Behavior::kRemoved:
      return splits;
    case Behavior::kIsolated:
      for (auto& r : splits) r.flag = false;
      return splits;
    case Behavior::kContiguous:
      for (const auto& r : splits) {
        if (r.flag == previous && !out.empty()) {
          out.back().end = r.end;
        } else {
          out.push_back({r.begin, r.end, false});
        }
        previous = r.flag;
      }
      return out;
    case Behavior::kMergedWithPrevious:
      for (const auto& r : splits) {
        if (r.flag && !previous && !out.empty()) {
          out.back().end = r.end;
        } else {
          out.push_back({r.begin, r.end, false});
        }
        previous = r.flag;
      }
      return out;
    case Behavior::kMergedWithNext:
      for (auto it = splits.rbegin(); it != splits.rend(); ++it) {
        if (it->flag && !previous && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back({it->begin, it->end, false});
        }
        previous = it->flag;
      }
      return std::vector<Range>(out.rbegin(), out.rend());
  }
  return splits;
}

}  // namespace

struct PreTokenizer::Step {
  enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
  std::unique_ptr<Regex> regex;  // kSplit with a regex; kByteLevel with use_regex
  std::string literal;           // kSplit with a String pattern
  Behavior behavior = Behavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;  // kByteLevel

  // Matches and gaps of `text`, as Hugging Face's Pattern::find_matches.
  Status FindMatches(std::string_view text, std::vector<Range>* out) const {
    std::vector<std::pair<size_t, size_t>> matches;
    if (regex != nullptr) {
      SKRULL_RETURN_IF_ERROR(regex->FindAll(text, &matches));
    } else if (!literal.empty()) {
      for (size_t at = text.find(literal); at != std::string_view::npos;
           at = text.find(literal, at + literal.size())) {
        matches.emplace_back(at, at + literal.size());
      }
    }
    size_t previous = 0;
    for (const auto& [b, e] : matches) {
      if (previous != b) out->push_back({previous, b, invert});
      out->push_back({b, e, !invert});
      previous = e;
    }
    if (previous != text.size()) out->push_back({previous, text.size(), invert});
    return OkStatus();
  }

  Status Apply(std::string_view segment, const std::vector<Piece>& in,
               std::vector<Piece>* out) const {
    std::string scratch;
    std::vector<Range> splits;
    for (const Piece& piece : in) {
      Piece p = piece;
      if (kind == Kind::kByteLevel && add_prefix_space && !p.space_prefix &&
          segment[p.begin] != ' ') {
        p.space_prefix = true;
      }
      if (kind == Kind::kByteLevel && regex == nullptr) {
        out->push_back(p);
        continue;
      }
      std::string_view text = segment.substr(p.begin, p.end - p.begin);
      if (p.space_prefix) {
        scratch.assign(1, ' ');
        scratch.append(text);
        text = scratch;
      }
      splits.clear();
      SKRULL_RETURN_IF_ERROR(FindMatches(text, &splits));
      const Behavior b = kind == Kind::kByteLevel ? Behavior::kIsolated : behavior;
      for (const Range& r : ApplyBehavior(std::move(splits), b)) {
        if (r.flag || r.begin == r.end) continue;
        // Offsets in `text` -> segment bytes; offset 0 is the inserted space.
        const size_t shift = p.space_prefix ? 1 : 0;
        Piece sub;
        sub.space_prefix = p.space_prefix && r.begin == 0;
        sub.begin = static_cast<uint32_t>(p.begin + (r.begin > 0 ? r.begin - shift : 0));
        sub.end = static_cast<uint32_t>(p.begin + r.end - shift);
        out->push_back(sub);
      }
    }
    return OkStatus();
  }
};

namespace {

StatusOr<Behavior> ParseBehavior(const JsonFields& f) {
  SKRULL_ASSIGN_OR_RETURN(const std::string name, f.OptionalString("behavior", "Isolated"));
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  return f.Error("behavior", "unknown behavior \"" + name + "\"");
}

// A pre-tokenizer object of tokenizer.json and where it is.
struct Located {
  const nlohmann::json* spec;
  std::string path;
  int depth;
};

}  // namespace

PreTokenizer::~PreTokenizer() = default;

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::FromJson(const nlohmann::json& spec) {
  std::unique_ptr<PreTokenizer> result(new PreTokenizer());
  if (spec.is_null()) return result;
  // Flatten nested Sequences in order.
  std::vector<Located> todo;
  std::vector<Located> stack = {{&spec, "pre_tokenizer", 1}};
  while (!stack.empty()) {
    Located s = std::move(stack.back());
    stack.pop_back();
    const JsonFields f(*s.spec, "", s.path);
    SKRULL_ASSIGN_OR_RETURN(const std::string type, ComponentType(f, *s.spec, s.depth));
    if (type == "Sequence") {
      SKRULL_ASSIGN_OR_RETURN(const nlohmann::json* list, f.RequiredArray("pretokenizers"));
      for (size_t i = list->size(); i-- > 0;) {
        stack.push_back(
            {&(*list)[i], f.Path("pretokenizers[" + std::to_string(i) + "]"), s.depth + 1});
      }
      continue;
    }
    todo.push_back(std::move(s));
  }
  for (const Located& s : todo) {
    const JsonFields f(*s.spec, "", s.path);
    SKRULL_ASSIGN_OR_RETURN(const std::string type, f.RequiredString("type"));
    auto step = std::make_unique<Step>();
    if (type == "Split") {
      step->kind = Step::Kind::kSplit;
      SKRULL_ASSIGN_OR_RETURN(step->behavior, ParseBehavior(f));
      SKRULL_ASSIGN_OR_RETURN(step->invert, f.OptionalBool("invert", false));
      SKRULL_ASSIGN_OR_RETURN(const nlohmann::json* pattern, f.RequiredObject("pattern"));
      const JsonFields p = f.Nested("pattern", *pattern);
      SKRULL_ASSIGN_OR_RETURN(const std::string regex, p.OptionalString("Regex"));
      SKRULL_ASSIGN_OR_RETURN(step->literal, p.OptionalString("String"));
      if (!regex.empty()) {
        auto re = Regex::Compile(regex);
        if (!re.ok()) return re.status().WithContext(p.Path("Regex"));
        step->regex = std::move(*re);
      } else if (step->literal.empty()) {
        return p.Error("", "must be {\"Regex\": \"...\"} or {\"String\": \"...\"}", pattern);
      }
    } else if (type == "ByteLevel") {
      step->kind = Step::Kind::kByteLevel;
      SKRULL_ASSIGN_OR_RETURN(step->add_prefix_space, f.OptionalBool("add_prefix_space", true));
      SKRULL_ASSIGN_OR_RETURN(const bool use_regex, f.OptionalBool("use_regex", true));
      if (use_regex) {
        SKRULL_ASSIGN_OR_RETURN(step->regex, Regex::Compile(kGpt2Pattern));
      }
      result->has_byte_level_ = true;
    } else {
      return f.Error("type",
                     "\"" + type + "\" is not supported (supported: Split, ByteLevel, Sequence)");
    }
    result->steps_.push_back(std::move(step));
  }
  return result;
}

Status PreTokenizer::PreTokenize(std::string_view segment, std::vector<Piece>* pieces) const {
  pieces->clear();
  if (segment.empty()) return OkStatus();
  pieces->push_back({0, static_cast<uint32_t>(segment.size()), false});
  std::vector<Piece> next;
  for (const auto& step : steps_) {
    next.clear();
    SKRULL_RETURN_IF_ERROR(step->Apply(segment, *pieces, &next));
    pieces->swap(next);
  }
  return OkStatus();
}

}  // namespace skrull::tokenizer
