// Template::Render: walks the tree of parser.h with Jinja2's scoping (a for
// loop body and a macro call get their own frame; if does not) and Python's
// operator semantics.
#include <chrono>
#include <cmath>
#include <ctime>
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
  Interpreter(const ValueDict& variables, const RenderOptions& options) : options_(options) {
    frames_.emplace_back();
    for (const auto& [k, v] : variables) frames_.back()[k] = v;
    AddGlobals();
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
    define("namespace", [](CallArgs& args) -> StatusOr<Value> {
      ValueDict entries;
      for (const Value& p : args.positional) {
        if (!p.IsDict()) return InvalidArgumentError("namespace(): positional args must be dicts");
        for (const auto& e : p.Entries()) entries.push_back(e);
      }
      for (const auto& [k, v] : args.keyword) entries.emplace_back(k, v);
      return Value::Dict(std::move(entries), /*is_namespace=*/true);
    });
    define("dict", [](CallArgs& args) -> StatusOr<Value> {
      ValueDict entries;
      for (const auto& [k, v] : args.keyword) entries.emplace_back(k, v);
      return Value::Dict(std::move(entries));
    });
    define("range", [](CallArgs& args) -> StatusOr<Value> {
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
      ValueList out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (out.size() >= 1'000'000) return InvalidArgumentError("range(): over 10^6 items");
        out.push_back(Value::Int(i));
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
    if (out->text.size() + piece.text.size() > options_.max_output_bytes) {
      return Error(line, "output is over " + std::to_string(options_.max_output_bytes) + " bytes");
    }
    out->Append(piece);
    return OkStatus();
  }

  Status Block(const NodeList& nodes, TaggedString* out, Flow* flow) {
    for (const auto& node : nodes) {
      SKRULL_RETURN_IF_ERROR(Statement(*node, out, flow));
      if (*flow != Flow::kNormal) return OkStatus();
    }
    return OkStatus();
  }

  Status Statement(const Node& n, TaggedString* out, Flow* flow) {
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
    if (v.IsList()) return v.Items();
    ValueList items;
    if (v.IsUndefined()) return items;
    if (v.IsDict() && !v.IsNamespace()) {
      for (const auto& [k, x] : v.Entries()) items.push_back(Value::String(k));
      return items;
    }
    if (v.IsString()) {
      size_t pos = 0;
      while (pos < v.Text().size()) {
        const size_t start = pos;
        tokenizer::NextCodePoint(v.Text(), &pos);
        items.push_back(Value::String(v.Str().Sub(start, pos)));
      }
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
    for (int64_t i = 0; i < length; ++i) {
      if (++iterations_ > options_.max_iterations) {
        return Error(n.line,
                     "over " + std::to_string(options_.max_iterations) + " loop iterations");
      }
      frames_.emplace_back();
      ValueList cycle_source;
      Value loop = Value::Dict({
          {"index", Value::Int(i + 1)},
          {"index0", Value::Int(i)},
          {"revindex", Value::Int(length - i)},
          {"revindex0", Value::Int(length - i - 1)},
          {"first", Value::Bool(i == 0)},
          {"last", Value::Bool(i == length - 1)},
          {"length", Value::Int(length)},
          {"depth", Value::Int(1)},
          {"depth0", Value::Int(0)},
          {"previtem", i > 0 ? items[i - 1] : Value::Undefined("no previous item")},
          {"nextitem", i + 1 < length ? items[i + 1] : Value::Undefined("no next item")},
          {"cycle", Value::Function(
                        "loop.cycle",
                        [i](CallArgs& args) -> StatusOr<Value> {
                          if (args.positional.empty()) {
                            return InvalidArgumentError("loop.cycle: no items");
                          }
                          return args.positional[static_cast<size_t>(i) % args.positional.size()];
                        })},
      });
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
    if ((object.IsList() || object.IsString()) && key.type() == Value::Type::kInt) {
      SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterable(object, line));
      int64_t i = key.AsInt();
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::Undefined(object.TypeName() + " index out of range");
      return items[static_cast<size_t>(i)];
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
    SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterable(object, e.line));
    const auto n = static_cast<int64_t>(items.size());
    auto clamp = [&](int64_t v, bool is_given, int64_t def) {
      if (!is_given) return def;
      if (v < 0) v += n;
      if (step > 0) return std::min(std::max<int64_t>(v, 0), n);
      return std::min(std::max<int64_t>(v, -1), n - 1);
    };
    const int64_t start = clamp(bounds[0], given[0], step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(bounds[1], given[1], step > 0 ? n : -1);
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      out.push_back(items[static_cast<size_t>(i)]);
    }
    if (!object.IsString()) return Value::List(std::move(out), object.IsTuple());
    TaggedString s;
    for (const Value& c : out) s.Append(c.Str());
    return Value::String(std::move(s));
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
    filter = [&](const std::string& name, CallArgs& a) {
      return ApplyFilter(name, a, test, filter);
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
    auto as_int = [](const Value& v) {
      return v.type() == Value::Type::kBool ? (v.AsBool() ? 1 : 0) : v.AsInt();
    };
    auto as_num = [&](const Value& v) {
      return v.type() == Value::Type::kBool ? (v.AsBool() ? 1.0 : 0.0) : v.AsNumber();
    };
    const bool numbers = (a.IsNumber() || a.type() == Value::Type::kBool) &&
                         (b.IsNumber() || b.type() == Value::Type::kBool);
    if (op == "+") {
      if (a.IsString() && b.IsString()) {
        TaggedString s = a.Str();
        s.Append(b.Str());
        return Value::String(std::move(s));
      }
      if (a.IsList() && b.IsList() && a.IsTuple() == b.IsTuple()) {
        ValueList items = a.Items();
        items.insert(items.end(), b.Items().begin(), b.Items().end());
        return Value::List(std::move(items), a.IsTuple());
      }
      if (numbers && is_int(a) && is_int(b)) {
        int64_t r;
        if (__builtin_add_overflow(as_int(a), as_int(b), &r))
          return Error(line, "integer overflow");
        return Value::Int(r);
      }
      if (numbers) return Value::Float(as_num(a) + as_num(b));
    } else if (op == "-" && numbers) {
      if (is_int(a) && is_int(b)) {
        int64_t r;
        if (__builtin_sub_overflow(as_int(a), as_int(b), &r))
          return Error(line, "integer overflow");
        return Value::Int(r);
      }
      return Value::Float(as_num(a) - as_num(b));
    } else if (op == "*") {
      if (numbers && is_int(a) && is_int(b)) {
        int64_t r;
        if (__builtin_mul_overflow(as_int(a), as_int(b), &r))
          return Error(line, "integer overflow");
        return Value::Int(r);
      }
      if (numbers) return Value::Float(as_num(a) * as_num(b));
      const Value& s = a.IsString() ? a : b;
      const Value& k = a.IsString() ? b : a;
      if (s.IsString() && is_int(k)) {
        const int64_t times = as_int(k);
        if (times > 0 && s.Text().size() * static_cast<size_t>(times) > options_.max_output_bytes) {
          return Error(line, "string repetition too large");
        }
        TaggedString out;
        for (int64_t i = 0; i < times; ++i) out.Append(s.Str());
        return Value::String(std::move(out));
      }
    } else if ((op == "/" || op == "//" || op == "%") && numbers) {
      if (as_num(b) == 0) return Error(line, "division by zero");
      if (op == "/") return Value::Float(as_num(a) / as_num(b));
      if (is_int(a) && is_int(b)) {
        const int64_t x = as_int(a), y = as_int(b);
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
          --q;
          r += y;
        }
        return Value::Int(op == "//" ? q : r);
      }
      const double x = as_num(a), y = as_num(b);
      if (op == "//") return Value::Float(std::floor(x / y));
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::Float(r);
    } else if (op == "**" && numbers) {
      if (is_int(a) && is_int(b) && as_int(b) >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < as_int(b); ++i) {
          if (__builtin_mul_overflow(r, as_int(a), &r)) return Error(line, "integer overflow");
        }
        return Value::Int(r);
      }
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
      s.Append(b.ToStr());
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

  StatusOr<Value> Eval(const Expr& e) {
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
  std::vector<Frame> frames_;
  int64_t iterations_ = 0;
  int depth_ = 0;
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
