#include "controller/kube/label_selector.h"

#include <algorithm>
#include <cctype>

namespace skrull::kube {

namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Label keys: an optional DNS prefix and '/', then [A-Za-z0-9._-].
bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 316) return false;
  return std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/';
  });
}

bool ValidValue(const std::string& value) {
  if (value.size() > 63) return false;
  return std::all_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

// Splits on commas outside parentheses.
std::vector<std::string> SplitRequirements(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth <= 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// " in " or " notin " (or followed directly by '(') after the key.
size_t FindSetOperator(const std::string& text, const std::string& op) {
  for (size_t at = text.find(op); at != std::string::npos; at = text.find(op, at + 1)) {
    const bool before = at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t');
    const size_t after = at + op.size();
    const bool after_ok = after < text.size() && (text[after] == ' ' || text[after] == '(');
    if (before && after_ok) return at;
  }
  return std::string::npos;
}

}  // namespace

StatusOr<LabelSelector::Requirement> LabelSelector::ParseRequirement(const std::string& raw) {
  const std::string text = Trim(raw);
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("requirement \"" + text + "\": " + why);
  };
  Requirement r;
  if (text.empty()) return bad("empty requirement (a stray comma?)");
  const size_t in_at = FindSetOperator(text, "in");
  const size_t notin_at = FindSetOperator(text, "notin");
  if (in_at != std::string::npos || notin_at != std::string::npos) {
    const bool notin = notin_at != std::string::npos;
    const size_t at = notin ? notin_at : in_at;
    r.op = notin ? Op::kNotIn : Op::kIn;
    r.key = Trim(text.substr(0, at));
    const std::string set = Trim(text.substr(at + (notin ? 5 : 2)));
    if (set.empty() || set.front() != '(') return bad("expected \"(\" after the operator");
    if (set.back() != ')') return bad("missing \")\"");
    std::string inner = set.substr(1, set.size() - 2);
    size_t start = 0;
    while (true) {
      size_t comma = inner.find(',', start);
      std::string v =
          Trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!ValidValue(v)) return bad("invalid value \"" + v + "\"");
      r.values.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (text[0] == '!') {
    r.op = Op::kNotExists;
    r.key = Trim(text.substr(1));
  } else if (size_t ne = text.find("!="); ne != std::string::npos) {
    r.op = Op::kNotEquals;
    r.key = Trim(text.substr(0, ne));
    r.values.push_back(Trim(text.substr(ne + 2)));
  } else if (size_t eq = text.find('='); eq != std::string::npos) {
    r.op = Op::kEquals;
    r.key = Trim(text.substr(0, eq));
    const size_t value_at = eq + 1 < text.size() && text[eq + 1] == '=' ? eq + 2 : eq + 1;
    r.values.push_back(Trim(text.substr(value_at)));
  } else if (text.find_first_of("<>()") != std::string::npos) {
    return bad("unsupported operator (use =, ==, !=, in, notin, or a bare key)");
  } else {
    r.op = Op::kExists;
    r.key = text;
  }
  if (!ValidKey(r.key)) return bad("invalid key \"" + r.key + "\"");
  for (const std::string& v : r.values) {
    if (!ValidValue(v)) return bad("invalid value \"" + v + "\"");
  }
  return r;
}

StatusOr<LabelSelector> LabelSelector::Parse(const std::string& selector) {
  LabelSelector out;
  if (Trim(selector).empty()) return out;
  for (const std::string& part : SplitRequirements(selector)) {
    StatusOr<Requirement> r = ParseRequirement(part);
    if (!r.ok()) return r.status().WithContext("label selector \"" + selector + "\"");
    out.requirements_.push_back(std::move(r).value());
  }
  return out;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const Requirement& r : requirements_) {
    const bool has = labels.is_object() && labels.contains(r.key) && labels[r.key].is_string();
    const std::string value = has ? labels[r.key].get<std::string>() : "";
    const bool in_values =
        has && std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    bool ok = false;
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        ok = in_values;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !in_values;
        break;
      case Op::kExists:
        ok = has;
        break;
      case Op::kNotExists:
        ok = !has;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

bool LabelSelector::MatchesObject(const nlohmann::json& object) const {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    return Matches(nullptr);
  }
  const nlohmann::json& meta = object["metadata"];
  return Matches(meta.contains("labels") ? meta["labels"] : nlohmann::json(nullptr));
}

}  // namespace skrull::kube
