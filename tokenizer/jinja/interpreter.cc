// Template::Render: walks the tree of parser.h with Jinja2's scoping (a for
// loop body and a macro call get their own frame; if does not) and Python's
// operator semantics.
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <unordered_map>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/utf8.h"

namespace skrull::jinja {

struct NodeListHolder {
  NodeList nodes;
};

namespace {

enum class Flow { kNormal, kBreak, kContinue };

// range() makes at most this many items.
constexpr uint64_t kMaxRangeItems = 1'000'000;

// How many of start, start + step, ... lie before `stop` (after it for a
// negative step), without overflow. REQUIRES: step != 0.
uint64_t SliceCount(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 ? start >= stop : start <= stop) return 0;
  const uint64_t span = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                                 : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
  const uint64_t stride =
      step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  return (span - 1) / stride + 1;
}

// Python's + - * // % ** (exponent >= 0) on ints: floor division and modulo
// are defined for every pair but a zero divisor; a result outside 64 bits is
// an error (Python's ints have no bound, ours do).
StatusOr<int64_t> IntArithmetic(const std::string& op, int64_t x, int64_t y) {
  int64_t r = 0;
  auto overflow = [&]() -> Status {
    return InvalidArgumentError("integer overflow: " + std::to_string(x) + " " + op + " " +
                                std::to_string(y) + " does not fit in 64 bits");
  };
  if (op == "+") {
    if (__builtin_add_overflow(x, y, &r)) return overflow();
    return r;
  }
  if (op == "-") {
    if (__builtin_sub_overflow(x, y, &r)) return overflow();
    return r;
  }
  if (op == "*") {
    if (__builtin_mul_overflow(x, y, &r)) return overflow();
    return r;
  }
  if (op == "//" || op == "%") {
    if (y == 0) return InvalidArgumentError("division by zero");
    if (y == -1) {  // x / -1 traps for INT64_MIN
      if (op == "%") return 0;
      if (x == std::numeric_limits<int64_t>::min()) return overflow();
      return -x;
    }
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      --q;
      m += y;
    }
    return op == "//" ? q : m;
  }
  if (op == "**") {  // by squaring: y can be 2^63 - 1
    r = 1;
    int64_t base = x;
    for (uint64_t e = static_cast<uint64_t>(y); e != 0; e >>= 1) {
      if ((e & 1) != 0 && __builtin_mul_overflow(r, base, &r)) return overflow();
      if ((e >> 1) != 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
    }
    return r;
  }
  return InvalidArgumentError("unsupported operand type(s) for " + op + ": 'int' and 'int'");
}

// Python's index into a sequence of `n`: i, or i + n when negative; -1 when
// out of range.
int64_t NormalizeIndex(int64_t i, int64_t n) {
  if (i < 0) i = i < -n ? -1 : i + n;
  return i < n ? i : -1;
}

std::string LocalStrftime(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
  return std::string(buf, n);
}

class Interpreter {
 public:
  Interpreter(const ValueDict& variables, const RenderOptions& options)
      : options_(options), budget_(options.limits), scope_(&budget_) {
    frames_.emplace_back();
    for (const auto& [k, v] : variables) frames_.back()[k] = v;
    AddGlobals();
  }

  // Namespaces may contain each other (or themselves): empty them one by one
  // so no chain of them is freed recursively and no cycle leaks.
  ~Interpreter() {
    frames_.clear();
    for (Value& ns : namespaces_) ValueDict().swap(ns.Entries());
  }

  Status Run(const NodeList& nodes, TaggedString* out) {
    Flow flow = Flow::kNormal;
    return Block(nodes, out, &flow);
  }

 private:
  using Frame = std::unordered_map<std::string, Value>;

  Status Error(int line, const std::string& what) const {
    return InvalidArgumentError("line " + std::to_string(line) + ": " + what);
  }

  void AddGlobals() {
    Frame& g = frames_.front();
    auto define = [&](const std::string& name, NativeFunction fn) {
      if (g.count(name) == 0) g[name] = Value::Function(name, std::move(fn));
    };
    define("namespace", [this](CallArgs& args) -> StatusOr<Value> {
      ValueDict entries;
      for (const Value& p : args.positional) {
        if (!p.IsDict()) return InvalidArgumentError("namespace(): positional args must be dicts");
        for (const auto& e : p.Entries()) entries.push_back(e);
      }
      for (const auto& [k, v] : args.keyword) entries.emplace_back(k, v);
      namespaces_.push_back(Value::Dict(std::move(entries), /*is_namespace=*/true));
      return namespaces_.back();
    });
    define("dict", [](CallArgs& args) -> StatusOr<Value> {
      ValueDict entries;
      for (const auto& [k, v] : args.keyword) entries.emplace_back(k, v);
      return Value::Dict(std::move(entries));
    });
    define("range", [this](CallArgs& args) -> StatusOr<Value> {
      int64_t start = 0, stop = 0, step = 1;
      const auto& p = args.positional;
      for (const Value& v : p) {
        if (v.type() != Value::Type::kInt) return InvalidArgumentError("range(): ints only");
      }
      if (p.size() == 1) {
        stop = p[0].AsInt();
      } else if (p.size() >= 2) {
        start = p[0].AsInt();
        stop = p[1].AsInt();
        if (p.size() > 2) step = p[2].AsInt();
      }
      if (step == 0) return InvalidArgumentError("range() arg 3 must not be zero");
      const uint64_t count = SliceCount(start, stop, step);
      if (count > kMaxRangeItems) {
        return InvalidArgumentError("range(): " + std::to_string(count) + " items, over " +
                                    std::to_string(kMaxRangeItems));
      }
      if (!budget_.FitsList(count, "range()")) return budget_.status();
      ValueList out;
      out.reserve(count);
      for (uint64_t k = 0; k < count; ++k) {
        out.push_back(Value::Int(start + static_cast<int64_t>(k) * step));
      }
      return Value::List(std::move(out));
    });
    define("raise_exception", [](CallArgs& args) -> StatusOr<Value> {
      const std::string message = args.positional.empty() ? "" : args.positional[0].ToStr().text;
      return InvalidArgumentError("raise_exception: " + message);
    });
    define("strftime_now", [this](CallArgs& args) -> StatusOr<Value> {
      const std::string format = args.positional.empty() ? "" : args.positional[0].ToStr().text;
      return Value::String(options_.strftime_now ? options_.strftime_now(format)
                                                 : LocalStrftime(format));
    });
  }

  Value Lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value::Undefined("'" + name + "' is undefined");
  }

  Status Append(TaggedString* out, const TaggedString& piece, int line) {
    if (!budget_.FitsString(out->text.size() + piece.text.size(), "the output") ||
        !budget_.Scan(piece.text.size())) {
      return Error(line, budget_.status().message());
    }
    out->Append(piece);
    return OkStatus();
  }

  // The budget's error at `line`, once a value walk or a factory spent it.
  Status Spent(int line) const { return Error(line, budget_.status().message()); }

  Status Block(const NodeList& nodes, TaggedString* out, Flow* flow) {
    for (const auto& node : nodes) {
      SKRULL_RETURN_IF_ERROR(Statement(*node, out, flow));
      if (*flow != Flow::kNormal) return OkStatus();
    }
    return OkStatus();
  }

  Status Statement(const Node& n, TaggedString* out, Flow* flow) {
    const bool entered = budget_.Enter() && budget_.Step();
    Status status = entered ? StatementIn(n, out, flow) : Spent(n.line);
    budget_.Leave();
    if (status.ok() && !budget_.ok()) return Spent(n.line);
    return status;
  }

  Status StatementIn(const Node& n, TaggedString* out, Flow* flow) {
    switch (n.kind) {
      case Node::Kind::kText: {
        TaggedString t;
        t.text = n.text;
        return Append(out, t, n.line);
      }
      case Node::Kind::kOutput: {
        SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*n.expr));
        return Append(out, v.ToStr(), n.line);
      }
      case Node::Kind::kIf:
        for (const auto& [cond, body] : n.branches) {
          SKRULL_ASSIGN_OR_RETURN(Value c, Eval(*cond));
          if (c.Truthy()) return Block(body, out, flow);
        }
        return Block(n.else_body, out, flow);
      case Node::Kind::kFor:
        return For(n, out);
      case Node::Kind::kSet:
        return Set(n);
      case Node::Kind::kMacro:
        return Macro(n);
      case Node::Kind::kBreak:
        *flow = Flow::kBreak;
        return OkStatus();
      case Node::Kind::kContinue:
        *flow = Flow::kContinue;
        return OkStatus();
    }
    return OkStatus();
  }

  StatusOr<ValueList> Iterable(const Value& v, int line) {
    if (v.IsList()) {
      if (!budget_.Step(static_cast<int64_t>(v.Items().size()))) return Spent(line);
      return v.Items();
    }
    ValueList items;
    if (v.IsUndefined()) return items;
    if (v.IsDict() && !v.IsNamespace()) {
      if (!budget_.FitsList(v.Entries().size(), "a dict's keys")) return Spent(line);
      for (const auto& [k, x] : v.Entries()) items.push_back(Value::String(k));
      return items;
    }
    if (v.IsString()) {
      if (!budget_.Scan(v.Text().size())) return Spent(line);
      const size_t n = tokenizer::CodePointCount(v.Text());
      if (!budget_.FitsList(n, "a string's characters")) return Spent(line);
      items.reserve(n);
      size_t pos = 0;
      while (pos < v.Text().size()) {
        const size_t start = pos;
        tokenizer::NextCodePoint(v.Text(), &pos);
        items.push_back(Value::String(v.Str().Sub(start, pos)));
      }
      if (!budget_.ok()) return Spent(line);
      return items;
    }
    return Error(line, "'" + v.TypeName() + "' object is not iterable");
  }

  Status Bind(const Target& target, const Value& v, int line) {
    Frame& frame = frames_.back();
    if (target.names.size() == 1) {
      frame[target.names[0]] = v;
      return OkStatus();
    }
    SKRULL_ASSIGN_OR_RETURN(ValueList parts, Iterable(v, line));
    if (parts.size() != target.names.size()) {
      return Error(line, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                             std::to_string(target.names.size()) + " names");
    }
    for (size_t i = 0; i < parts.size(); ++i) frame[target.names[i]] = parts[i];
    return OkStatus();
  }

  Status For(const Node& n, TaggedString* out) {
    SKRULL_ASSIGN_OR_RETURN(Value source, Eval(*n.expr));
    SKRULL_ASSIGN_OR_RETURN(ValueList all, Iterable(source, n.line));
    ValueList items;
    if (n.filter) {
      for (const Value& item : all) {
        frames_.emplace_back();
        Status bound = Bind(n.target, item, n.line);
        auto keep = bound.ok() ? Eval(*n.filter) : StatusOr<Value>(bound);
        frames_.pop_back();
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) items.push_back(item);
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) {
      Flow flow = Flow::kNormal;
      return Block(n.else_body, out, &flow);
    }
    const auto length = static_cast<int64_t>(items.size());
    // One `loop` object per loop, updated in place (as Jinja2's LoopContext
    // advances): an iteration then costs no allocation for it.
    auto index = std::make_shared<int64_t>(0);
    Value loop = Value::Dict({
        {"index", Value()},
        {"index0", Value()},
        {"revindex", Value()},
        {"revindex0", Value()},
        {"first", Value()},
        {"last", Value()},
        {"length", Value::Int(length)},
        {"depth", Value::Int(1)},
        {"depth0", Value::Int(0)},
        {"previtem", Value()},
        {"nextitem", Value()},
        {"cycle",
         Value::Function(
             "loop.cycle",
             [index](CallArgs& args) -> StatusOr<Value> {
               if (args.positional.empty()) {
                 return InvalidArgumentError("loop.cycle: no items");
               }
               return args.positional[static_cast<size_t>(*index) % args.positional.size()];
             })},
    });
    ValueDict& fields = loop.Entries();
    for (int64_t i = 0; i < length; ++i) {
      if (!budget_.Step()) return Spent(n.line);
      *index = i;
      fields[0].second = Value::Int(i + 1);
      fields[1].second = Value::Int(i);
      fields[2].second = Value::Int(length - i);
      fields[3].second = Value::Int(length - i - 1);
      fields[4].second = Value::Bool(i == 0);
      fields[5].second = Value::Bool(i == length - 1);
      fields[9].second = i > 0 ? items[i - 1] : Value::Undefined("no previous item");
      fields[10].second = i + 1 < length ? items[i + 1] : Value::Undefined("no next item");
      frames_.emplace_back();
      frames_.back()["loop"] = loop;
      Status bound = Bind(n.target, items[i], n.line);
      Flow flow = Flow::kNormal;
      Status done = bound.ok() ? Block(n.body, out, &flow) : bound;
      frames_.pop_back();
      SKRULL_RETURN_IF_ERROR(done);
      if (flow == Flow::kBreak) break;
    }
    return OkStatus();
  }

  Status Set(const Node& n) {
    Value v;
    if (n.expr) {
      SKRULL_ASSIGN_OR_RETURN(v, Eval(*n.expr));
    } else {
      TaggedString body;
      Flow flow = Flow::kNormal;
      SKRULL_RETURN_IF_ERROR(Block(n.body, &body, &flow));
      v = Value::String(std::move(body));
    }
    if (!n.target.attribute.empty()) {
      Value ns = Lookup(n.target.names[0]);
      if (!ns.IsNamespace()) {
        return Error(n.line,
                     "cannot assign attribute on non-namespace object '" + n.target.names[0] + "'");
      }
      if (!budget_.Step(static_cast<int64_t>(ns.Entries().size()))) return Spent(n.line);
      for (auto& [k, x] : ns.Entries()) {
        if (k == n.target.attribute) {
          x = v;
          return OkStatus();
        }
      }
      ns.Entries().emplace_back(n.target.attribute, v);
      return OkStatus();
    }
    return Bind(n.target, v, n.line);
  }

  Status Macro(const Node& n) {
    const Node* node = &n;
    frames_.back()[n.text] = Value::Function(
        n.text, [this, node](CallArgs& args) -> StatusOr<Value> { return CallMacro(*node, args); });
    return OkStatus();
  }

  StatusOr<Value> CallMacro(const Node& n, CallArgs& args) {
    if (++depth_ > 64) {
      --depth_;
      return Error(n.line, "macro recursion deeper than 64");
    }
    frames_.emplace_back();
    Status status = OkStatus();
    for (size_t i = 0; i < n.params.size() && status.ok(); ++i) {
      const auto& [name, def] = n.params[i];
      Value v;
      bool given = false;
      if (i < args.positional.size()) {
        v = args.positional[i];
        given = true;
      }
      for (const auto& [k, x] : args.keyword) {
        if (k == name) {
          v = x;
          given = true;
        }
      }
      if (!given && def) {
        auto d = Eval(*def);
        if (!d.ok()) {
          status = d.status();
          break;
        }
        v = *d;
      }
      frames_.back()[name] = v;
    }
    TaggedString out;
    Flow flow = Flow::kNormal;
    if (status.ok()) status = Block(n.body, &out, &flow);
    frames_.pop_back();
    --depth_;
    SKRULL_RETURN_IF_ERROR(status);
    return Value::String(std::move(out));
  }

  StatusOr<CallArgs> Arguments(const Expr& e) {
    CallArgs args;
    for (const auto& item : e.items) {
      SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*item));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [k, item] : e.keywords) {
      SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*item));
      args.keyword.emplace_back(k, std::move(v));
    }
    return args;
  }

  StatusOr<Value> GetAttr(const Value& object, const std::string& name, int line) {
    if (object.IsUndefined()) {
      return Error(line, object.name().empty() ? "undefined value has no attribute '" + name + "'"
                                               : object.name());
    }
    Value method = BoundMethod(object, name);
    if (!method.IsUndefined()) return method;
    if (object.IsDict()) {
      if (const Value* v = object.Find(name)) return *v;
      return Value::Undefined("'" + object.TypeName() + " object' has no attribute '" + name + "'");
    }
    return Value::Undefined("'" + object.TypeName() + " object' has no attribute '" + name + "'");
  }

  StatusOr<Value> GetItem(const Value& object, const Value& key, int line) {
    if (object.IsUndefined()) {
      return Error(line, object.name().empty() ? "undefined value has no item " + key.Repr()
                                               : object.name());
    }
    if (object.IsDict() && key.IsString()) {
      if (const Value* v = object.Find(key.Text())) return *v;
      Value method = BoundMethod(object, key.Text());
      if (!method.IsUndefined()) return method;
      return Value::Undefined("'dict object' has no attribute " + key.Repr());
    }
    if (object.IsList() && key.type() == Value::Type::kInt) {
      const ValueList& items = object.Items();
      const int64_t i = NormalizeIndex(key.AsInt(), static_cast<int64_t>(items.size()));
      if (i < 0) return Value::Undefined(object.TypeName() + " index out of range");
      return items[static_cast<size_t>(i)];
    }
    if (object.IsString() && key.type() == Value::Type::kInt) {
      const std::string& text = object.Text();
      if (!budget_.Scan(text.size())) return Spent(line);
      const auto n = static_cast<int64_t>(tokenizer::CodePointCount(text));
      const int64_t i = NormalizeIndex(key.AsInt(), n);
      if (i < 0) return Value::Undefined("string index out of range");
      size_t begin = 0;
      for (int64_t k = 0; k < i; ++k) tokenizer::NextCodePoint(text, &begin);
      size_t end = begin;
      tokenizer::NextCodePoint(text, &end);
      return Value::String(object.Str().Sub(begin, end));
    }
    if (object.IsString() && key.IsString()) return GetAttr(object, key.Text(), line);
    return Value::Undefined("'" + object.TypeName() + " object' has no item " + key.Repr());
  }

  StatusOr<Value> Slice(const Expr& e) {
    SKRULL_ASSIGN_OR_RETURN(Value object, Eval(*e.operand));
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      if (!e.items[k]) continue;
      SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*e.items[k]));
      if (v.IsNone()) continue;
      if (v.type() != Value::Type::kInt) return Error(e.line, "slice indices must be integers");
      bounds[k] = v.AsInt();
      given[k] = true;
    }
    const int64_t step = bounds[2];
    if (step == 0) return Error(e.line, "slice step cannot be zero");
    if (!object.IsList() && !object.IsString()) {
      return Value::Undefined("'" + object.TypeName() + "' object is not subscriptable");
    }
    // Code point offsets of a string (one past the last at the end), so a
    // slice copies bytes, not one value per character.
    std::vector<size_t> starts;
    int64_t n = 0;
    if (object.IsString()) {
      const std::string& text = object.Text();
      if (!budget_.Scan(text.size()) ||
          !budget_.FitsList(tokenizer::CodePointCount(text) / (kItemBytes / sizeof(size_t)),
                            "a string slice's index")) {
        return Spent(e.line);
      }
      for (size_t pos = 0; pos < text.size();) {
        starts.push_back(pos);
        tokenizer::NextCodePoint(text, &pos);
      }
      n = static_cast<int64_t>(starts.size());
      starts.push_back(text.size());
    } else {
      n = static_cast<int64_t>(object.Items().size());
    }
    auto clamp = [&](int64_t v, bool is_given, int64_t def) {
      if (!is_given) return def;
      if (v < 0) v = v < -n ? -1 : v + n;  // v + n without overflow
      if (step > 0) return std::min(std::max<int64_t>(v, 0), n);
      return std::min(std::max<int64_t>(v, -1), n - 1);
    };
    const int64_t start = clamp(bounds[0], given[0], step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(bounds[1], given[1], step > 0 ? n : -1);
    const uint64_t count = SliceCount(start, stop, step);
    if (object.IsString()) {
      if (step == 1) {
        return Value::String(object.Str().Sub(starts[start], starts[start + count]));
      }
      TaggedString out;
      for (uint64_t k = 0; k < count; ++k) {
        const auto i = static_cast<size_t>(start + static_cast<int64_t>(k) * step);
        out.Append(object.Str().Sub(starts[i], starts[i + 1]));
      }
      return Value::String(std::move(out));
    }
    if (!budget_.FitsList(count, "a slice")) return Spent(e.line);
    ValueList out;
    out.reserve(count);
    for (uint64_t k = 0; k < count; ++k) {
      out.push_back(object.Items()[static_cast<size_t>(start + static_cast<int64_t>(k) * step)]);
    }
    return Value::List(std::move(out), object.IsTuple());
  }

  StatusOr<Value> Call(const Expr& e) {
    SKRULL_ASSIGN_OR_RETURN(Value callee, Eval(*e.operand));
    SKRULL_ASSIGN_OR_RETURN(CallArgs args, Arguments(e));
    if (callee.type() != Value::Type::kCallable) {
      return Error(e.line, (callee.IsUndefined() && !callee.name().empty()
                                ? callee.name()
                                : "'" + callee.TypeName() + "' object") +
                               " is not callable");
    }
    auto result = callee.Fn()(args);
    if (!result.ok() && result.status().message().rfind("line ", 0) != 0) {
      return Error(e.line, result.status().message());
    }
    return result;
  }

  StatusOr<Value> Filter(const Expr& e) {
    SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*e.operand));
    SKRULL_ASSIGN_OR_RETURN(CallArgs args, Arguments(e));
    args.positional.insert(args.positional.begin(), v);
    TestFn test = [](const std::string& name, CallArgs& a) { return ApplyTest(name, a); };
    FilterFn filter;
    // map() calls filters by name, map() among them: each call is a level.
    filter = [&](const std::string& name, CallArgs& a) -> StatusOr<Value> {
      const bool entered = budget_.Enter();
      auto r = entered ? ApplyFilter(name, a, test, filter) : StatusOr<Value>(budget_.status());
      budget_.Leave();
      return r;
    };
    auto result = ApplyFilter(e.name, args, test, filter);
    if (!result.ok()) return Error(e.line, result.status().message());
    return result;
  }

  StatusOr<Value> Test(const Expr& e) {
    SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*e.operand));
    SKRULL_ASSIGN_OR_RETURN(CallArgs args, Arguments(e));
    args.positional.insert(args.positional.begin(), v);
    auto result = ApplyTest(e.name, args);
    if (!result.ok()) return Error(e.line, result.status().message());
    return Value::Bool(*result != e.negated);
  }

  Status RequireDefined(const Value& v, int line) const {
    if (!v.IsUndefined()) return OkStatus();
    return Error(line, v.name().empty() ? "undefined value used in an expression" : v.name());
  }

  StatusOr<Value> Arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
    SKRULL_RETURN_IF_ERROR(RequireDefined(a, line));
    SKRULL_RETURN_IF_ERROR(RequireDefined(b, line));
    auto is_int = [](const Value& v) {
      return v.type() == Value::Type::kInt || v.type() == Value::Type::kBool;
    };
    auto as_int = [](const Value& v) -> int64_t {
      return v.type() == Value::Type::kBool ? (v.AsBool() ? 1 : 0) : v.AsInt();
    };
    auto as_num = [&](const Value& v) {
      return v.type() == Value::Type::kBool ? (v.AsBool() ? 1.0 : 0.0) : v.AsNumber();
    };
    const bool numbers = (a.IsNumber() || a.type() == Value::Type::kBool) &&
                         (b.IsNumber() || b.type() == Value::Type::kBool);
    const bool ints = numbers && is_int(a) && is_int(b);
    if (ints && op != "/" && !(op == "**" && as_int(b) < 0)) {
      auto r = IntArithmetic(op, as_int(a), as_int(b));
      if (!r.ok()) return Error(line, r.status().message());
      return Value::Int(*r);
    }
    if (op == "+") {
      if (a.IsString() && b.IsString()) {
        if (!budget_.FitsString(a.Text().size() + b.Text().size(), "a concatenation")) {
          return Spent(line);
        }
        TaggedString s = a.Str();
        s.Append(b.Str());
        return Value::String(std::move(s));
      }
      if (a.IsList() && b.IsList() && a.IsTuple() == b.IsTuple()) {
        if (!budget_.FitsList(a.Items().size() + b.Items().size(), "a concatenation")) {
          return Spent(line);
        }
        ValueList items = a.Items();
        items.insert(items.end(), b.Items().begin(), b.Items().end());
        return Value::List(std::move(items), a.IsTuple());
      }
      if (numbers) return Value::Float(as_num(a) + as_num(b));
    } else if (op == "-" && numbers) {
      return Value::Float(as_num(a) - as_num(b));
    } else if (op == "*") {
      if (numbers) return Value::Float(as_num(a) * as_num(b));
      const Value& s = a.IsString() ? a : b;
      const Value& k = a.IsString() ? b : a;
      if (s.IsString() && is_int(k)) {
        const int64_t times = std::max<int64_t>(as_int(k), 0);
        size_t bytes = 0;
        if (__builtin_mul_overflow(s.Text().size(), static_cast<uint64_t>(times), &bytes)) {
          bytes = std::numeric_limits<size_t>::max();
        }
        if (!budget_.FitsString(bytes, "a repeated string")) return Spent(line);
        TaggedString out;
        out.text.reserve(bytes);
        for (int64_t i = 0; i < times; ++i) out.Append(s.Str());
        return Value::String(std::move(out));
      }
    } else if ((op == "/" || op == "//" || op == "%") && numbers) {
      const double x = as_num(a), y = as_num(b);
      if (y == 0) return Error(line, "division by zero");
      if (op == "/") return Value::Float(x / y);
      if (op == "//") return Value::Float(std::floor(x / y));
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::Float(r);
    } else if (op == "**" && numbers) {
      return Value::Float(std::pow(as_num(a), as_num(b)));
    }
    return Error(line, "unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" +
                           b.TypeName() + "'");
  }

  StatusOr<Value> Binary(const Expr& e) {
    SKRULL_ASSIGN_OR_RETURN(Value a, Eval(*e.operand));
    if (e.name == "and") return a.Truthy() ? Eval(*e.items[0]) : StatusOr<Value>(a);
    if (e.name == "or") return a.Truthy() ? StatusOr<Value>(a) : Eval(*e.items[0]);
    SKRULL_ASSIGN_OR_RETURN(Value b, Eval(*e.items[0]));
    if (e.name == "~") {
      TaggedString s = a.ToStr();
      TaggedString t = b.ToStr();
      if (!budget_.FitsString(s.text.size() + t.text.size(), "a concatenation")) {
        return Spent(e.line);
      }
      s.Append(t);
      return Value::String(std::move(s));
    }
    return Arithmetic(e.name, a, b, e.line);
  }

  StatusOr<bool> CompareOne(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "==") return a.Equals(b);
    if (op == "!=") return !a.Equals(b);
    if (op == "in" || op == "not in") {
      CallArgs args;
      args.positional = {a, b};
      if (b.IsUndefined()) return op == "not in";
      auto r = ApplyTest("in", args);
      if (!r.ok()) return Error(line, r.status().message());
      return op == "in" ? *r : !*r;
    }
    StatusOr<bool> r = op == "<"    ? LessThan(a, b)
                       : op == ">"  ? LessThan(b, a)
                       : op == "<=" ? LessThan(b, a)
                                    : LessThan(a, b);
    if (!r.ok()) return Error(line, r.status().message());
    return (op == "<" || op == ">") ? *r : !*r;
  }

  // Every expression costs a step and a level of the render depth; a value
  // walk or a factory that spent the budget inside it is reported here, at
  // the innermost expression.
  StatusOr<Value> Eval(const Expr& e) {
    const bool entered = budget_.Enter() && budget_.Step();
    StatusOr<Value> v = entered ? EvalIn(e) : StatusOr<Value>(Spent(e.line));
    budget_.Leave();
    if (v.ok() && !budget_.ok()) return Spent(e.line);
    return v;
  }

  StatusOr<Value> EvalIn(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const auto& item : e.items) {
          SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*item));
          items.push_back(std::move(v));
        }
        return Value::List(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        ValueDict entries;
        for (size_t i = 0; i < e.keys.size(); ++i) {
          SKRULL_ASSIGN_OR_RETURN(Value k, Eval(*e.keys[i]));
          SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*e.items[i]));
          if (!k.IsString()) return Error(e.line, "dict keys must be strings here");
          bool replaced = false;
          for (auto& [key, x] : entries) {
            if (key == k.Text()) {
              x = v;
              replaced = true;
            }
          }
          if (!replaced) entries.emplace_back(k.Text(), std::move(v));
        }
        return Value::Dict(std::move(entries));
      }
      case Expr::Kind::kGetAttr: {
        SKRULL_ASSIGN_OR_RETURN(Value object, Eval(*e.operand));
        return GetAttr(object, e.name, e.line);
      }
      case Expr::Kind::kGetItem: {
        SKRULL_ASSIGN_OR_RETURN(Value object, Eval(*e.operand));
        SKRULL_ASSIGN_OR_RETURN(Value key, Eval(*e.items[0]));
        return GetItem(object, key, e.line);
      }
      case Expr::Kind::kSlice:
        return Slice(e);
      case Expr::Kind::kCall:
        return Call(e);
      case Expr::Kind::kFilter:
        return Filter(e);
      case Expr::Kind::kTest:
        return Test(e);
      case Expr::Kind::kUnary: {
        SKRULL_ASSIGN_OR_RETURN(Value v, Eval(*e.operand));
        if (e.name == "not") return Value::Bool(!v.Truthy());
        if (e.name == "+") return v;
        return Arithmetic("-", Value::Int(0), v, e.line);
      }
      case Expr::Kind::kBinary:
        return Binary(e);
      case Expr::Kind::kCompare: {
        SKRULL_ASSIGN_OR_RETURN(Value left, Eval(*e.operand));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          SKRULL_ASSIGN_OR_RETURN(Value right, Eval(*e.items[i]));
          SKRULL_ASSIGN_OR_RETURN(bool ok, CompareOne(e.ops[i], left, right, e.line));
          if (!ok) return Value::Bool(false);
          left = std::move(right);
        }
        return Value::Bool(true);
      }
      case Expr::Kind::kCondition: {
        SKRULL_ASSIGN_OR_RETURN(Value c, Eval(*e.operand));
        if (c.Truthy()) return Eval(*e.items[0]);
        if (e.items[1]) return Eval(*e.items[1]);
        return Value::Undefined("the condition was false and there is no else");
      }
    }
    return Error(e.line, "unknown expression");
  }

  const RenderOptions& options_;
  Budget budget_;
  Budget::Scope scope_;  // value walks and factories charge budget_
  std::vector<Frame> frames_;
  std::vector<Value> namespaces_;  // every namespace() made, emptied at the end
  int depth_ = 0;                  // macro calls
};

}  // namespace

Template::Template() = default;
Template::~Template() = default;

StatusOr<std::unique_ptr<Template>> Template::Parse(std::string_view source) {
  SKRULL_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  SKRULL_ASSIGN_OR_RETURN(NodeList nodes, jinja::Parse(tokens));
  std::unique_ptr<Template> t(new Template());
  t->nodes_ = std::make_unique<NodeListHolder>();
  t->nodes_->nodes = std::move(nodes);
  return t;
}

StatusOr<TaggedString> Template::Render(const ValueDict& variables,
                                        const RenderOptions& options) const {
  Interpreter interpreter(variables, options);
  TaggedString out;
  SKRULL_RETURN_IF_ERROR(interpreter.Run(nodes_->nodes, &out));
  return out;
}

}  // namespace skrull::jinja
