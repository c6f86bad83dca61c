#include "tokenizer/jinja/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "tokenizer/jinja/budget.h"

namespace skrull::jinja {
namespace {

using K = Token::Kind;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  StatusOr<NodeList> Template() {
    NodeList nodes;
    std::string end_tag;
    SKRULL_RETURN_IF_ERROR(Body({}, &nodes, &end_tag));
    if (!end_tag.empty()) return Error("unexpected {% " + end_tag + " %}");
    return nodes;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& Next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == K::kOp && Peek(ahead).value == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == K::kName && Peek(ahead).value == name;
  }
  Status Error(const std::string& what) const {
    return InvalidArgumentError("line " + std::to_string(Peek().line) + ": " + what);
  }
  // Recursion of the parser (parenthesized, unary and `not` expressions;
  // blocks): a guard per level, an error past kMaxTemplateNesting.
  class Nest {
   public:
    explicit Nest(int* depth) : depth_(depth) { ++*depth_; }
    ~Nest() { --*depth_; }
    bool ok() const { return *depth_ <= kMaxTemplateNesting; }

   private:
    int* depth_;
  };
  Status TooDeep(const char* what) const {
    return Error(std::string(what) + " nested deeper than " + std::to_string(kMaxTemplateNesting) +
                 " levels");
  }

  // Records e's depth (1 + its deepest child); the tree is walked
  // recursively (rendering, freeing), so it may not be deeper than
  // kMaxTemplateNesting.
  Status Seal(Expr* e) const {
    int deepest = 0;
    auto see = [&](const ExprPtr& child) {
      if (child) deepest = std::max(deepest, child->depth);
    };
    see(e->operand);
    for (const auto& c : e->items) see(c);
    for (const auto& c : e->keys) see(c);
    for (const auto& kw : e->keywords) see(kw.second);
    e->depth = deepest + 1;
    if (e->depth > kMaxTemplateNesting) return TooDeep("expressions");
    return OkStatus();
  }

  Status ExpectOp(const char* op) {
    if (!IsOp(op)) return Error(std::string("expected '") + op + "', got '" + Peek().value + "'");
    ++i_;
    return OkStatus();
  }
  Status ExpectBlockEnd() {
    if (Peek().kind != K::kBlockEnd) return Error("expected '%}', got '" + Peek().value + "'");
    ++i_;
    return OkStatus();
  }
  StatusOr<std::string> ExpectName() {
    if (Peek().kind != K::kName) return Error("expected a name, got '" + Peek().value + "'");
    return Next().value;
  }

  // Parses nodes until a block tag named in `ends` (returned in *end_tag,
  // consumed up to its name) or the end of input.
  Status Body(const std::set<std::string>& ends, NodeList* out, std::string* end_tag) {
    while (Peek().kind != K::kEof) {
      const Token& tok = Peek();
      if (tok.kind == K::kData) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kText;
        n->line = tok.line;
        n->text = tok.value;
        out->push_back(std::move(n));
        ++i_;
      } else if (tok.kind == K::kVarBegin) {
        ++i_;
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kOutput;
        n->line = tok.line;
        SKRULL_ASSIGN_OR_RETURN(n->expr, Expression());
        if (Peek().kind != K::kVarEnd) return Error("expected '}}', got '" + Peek().value + "'");
        ++i_;
        out->push_back(std::move(n));
      } else if (tok.kind == K::kBlockBegin) {
        const Token& name = Peek(1);
        if (name.kind != K::kName) return Error("expected a statement name after '{%'");
        if (ends.count(name.value) > 0) {
          i_ += 2;
          *end_tag = name.value;
          return OkStatus();
        }
        i_ += 2;
        SKRULL_RETURN_IF_ERROR(Statement(name.value, name.line, out));
      } else {
        return Error("unexpected '" + tok.value + "'");
      }
    }
    if (!ends.empty()) {
      return InvalidArgumentError("unexpected end of template: missing {% " + *ends.rbegin() +
                                  " %}");
    }
    return OkStatus();
  }

  // A body up to one of `ends`, and that closing tag's "%}".
  Status BlockBody(const std::set<std::string>& ends, NodeList* out, std::string* end_tag) {
    SKRULL_RETURN_IF_ERROR(Body(ends, out, end_tag));
    return ExpectBlockEnd();
  }

  Status Statement(const std::string& name, int line, NodeList* out) {
    Nest nest(&block_depth_);
    if (!nest.ok()) return TooDeep("blocks");
    auto n = std::make_unique<Node>();
    n->line = line;
    if (name == "if") return If(std::move(n), out);
    if (name == "for") return For(std::move(n), out);
    if (name == "set") return Set(std::move(n), out);
    if (name == "macro") return Macro(std::move(n), out);
    if (name == "break" || name == "continue") {
      n->kind = name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
      out->push_back(std::move(n));
      return OkStatus();
    }
    if (name == "generation") {
      // transformers' AssistantTracker tag: marks assistant text; renders its body.
      SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
      std::string end;
      return BlockBody({"endgeneration"}, out, &end);
    }
    return InvalidArgumentError("line " + std::to_string(line) + ": the tag {% " + name +
                                " %} is not supported by this chat-template interpreter");
  }

  Status If(std::unique_ptr<Node> n, NodeList* out) {
    n->kind = Node::Kind::kIf;
    while (true) {
      SKRULL_ASSIGN_OR_RETURN(ExprPtr cond, Expression());
      SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
      NodeList body;
      std::string end;
      SKRULL_RETURN_IF_ERROR(Body({"elif", "else", "endif"}, &body, &end));
      n->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") continue;
      SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
      if (end == "else") SKRULL_RETURN_IF_ERROR(BlockBody({"endif"}, &n->else_body, &end));
      break;
    }
    out->push_back(std::move(n));
    return OkStatus();
  }

  Status TargetNames(Target* target) {
    SKRULL_ASSIGN_OR_RETURN(std::string first, ExpectName());
    target->names.push_back(first);
    if (IsOp(".")) {
      ++i_;
      SKRULL_ASSIGN_OR_RETURN(target->attribute, ExpectName());
      return OkStatus();
    }
    while (IsOp(",")) {
      ++i_;
      SKRULL_ASSIGN_OR_RETURN(std::string more, ExpectName());
      target->names.push_back(more);
    }
    return OkStatus();
  }

  Status For(std::unique_ptr<Node> n, NodeList* out) {
    n->kind = Node::Kind::kFor;
    bool paren = IsOp("(");
    if (paren) ++i_;
    SKRULL_RETURN_IF_ERROR(TargetNames(&n->target));
    if (paren) SKRULL_RETURN_IF_ERROR(ExpectOp(")"));
    if (!n->target.attribute.empty()) return Error("a for loop cannot assign an attribute");
    if (!IsName("in")) return Error("expected 'in' in the for loop");
    ++i_;
    SKRULL_ASSIGN_OR_RETURN(n->expr, Condition(/*allow_if=*/false));
    if (IsName("if")) {
      ++i_;
      SKRULL_ASSIGN_OR_RETURN(n->filter, Expression());
    }
    if (IsName("recursive")) return Error("recursive for loops are not supported");
    SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string end;
    SKRULL_RETURN_IF_ERROR(BlockBody({"else", "endfor"}, &n->body, &end));
    if (end == "else") SKRULL_RETURN_IF_ERROR(BlockBody({"endfor"}, &n->else_body, &end));
    out->push_back(std::move(n));
    return OkStatus();
  }

  Status Set(std::unique_ptr<Node> n, NodeList* out) {
    n->kind = Node::Kind::kSet;
    SKRULL_RETURN_IF_ERROR(TargetNames(&n->target));
    if (IsOp("=")) {
      ++i_;
      SKRULL_ASSIGN_OR_RETURN(n->expr, TupleOrExpression());
      SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
    } else {
      SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
      std::string end;
      SKRULL_RETURN_IF_ERROR(BlockBody({"endset"}, &n->body, &end));
    }
    out->push_back(std::move(n));
    return OkStatus();
  }

  Status Macro(std::unique_ptr<Node> n, NodeList* out) {
    n->kind = Node::Kind::kMacro;
    SKRULL_ASSIGN_OR_RETURN(n->text, ExpectName());
    SKRULL_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      SKRULL_ASSIGN_OR_RETURN(std::string param, ExpectName());
      ExprPtr def;
      if (IsOp("=")) {
        ++i_;
        SKRULL_ASSIGN_OR_RETURN(def, Expression());
      }
      n->params.emplace_back(param, std::move(def));
      if (!IsOp(",")) break;
      ++i_;
    }
    SKRULL_RETURN_IF_ERROR(ExpectOp(")"));
    SKRULL_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string end;
    SKRULL_RETURN_IF_ERROR(BlockBody({"endmacro"}, &n->body, &end));
    out->push_back(std::move(n));
    return OkStatus();
  }

  ExprPtr Make(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = Peek().line;
    return e;
  }

  // `a, b` without parentheses (set statements).
  StatusOr<ExprPtr> TupleOrExpression() {
    SKRULL_ASSIGN_OR_RETURN(ExprPtr first, Expression());
    if (!IsOp(",")) return first;
    ExprPtr tuple = Make(Expr::Kind::kTuple);
    tuple->items.push_back(std::move(first));
    while (IsOp(",")) {
      ++i_;
      if (Peek().kind == K::kBlockEnd) break;
      SKRULL_ASSIGN_OR_RETURN(ExprPtr item, Expression());
      tuple->items.push_back(std::move(item));
    }
    SKRULL_RETURN_IF_ERROR(Seal(tuple.get()));
    return tuple;
  }

  StatusOr<ExprPtr> Expression() {
    Nest nest(&expr_depth_);
    if (!nest.ok()) return TooDeep("expressions");
    return Condition(/*allow_if=*/true);
  }

  StatusOr<ExprPtr> Condition(bool allow_if) {
    SKRULL_ASSIGN_OR_RETURN(ExprPtr expr, Or());
    while (allow_if && IsName("if")) {
      ++i_;
      ExprPtr cond = Make(Expr::Kind::kCondition);
      SKRULL_ASSIGN_OR_RETURN(cond->operand, Or());
      cond->items.push_back(std::move(expr));
      if (IsName("else")) {
        ++i_;
        Nest nest(&expr_depth_);
        if (!nest.ok()) return TooDeep("expressions");
        SKRULL_ASSIGN_OR_RETURN(ExprPtr other, Condition(true));
        cond->items.push_back(std::move(other));
      } else {
        cond->items.push_back(nullptr);
      }
      SKRULL_RETURN_IF_ERROR(Seal(cond.get()));
      expr = std::move(cond);
    }
    return expr;
  }

  StatusOr<ExprPtr> BinaryChain(StatusOr<ExprPtr> (Parser::*next)(),
                                const std::vector<std::string>& ops, bool names) {
    SKRULL_ASSIGN_OR_RETURN(ExprPtr left, (this->*next)());
    while (true) {
      std::string op;
      for (const auto& o : ops) {
        if (names ? IsName(o.c_str()) : IsOp(o.c_str())) op = o;
      }
      if (op.empty()) return left;
      ++i_;
      ExprPtr bin = Make(Expr::Kind::kBinary);
      bin->name = op;
      SKRULL_ASSIGN_OR_RETURN(ExprPtr right, (this->*next)());
      bin->operand = std::move(left);
      bin->items.push_back(std::move(right));
      SKRULL_RETURN_IF_ERROR(Seal(bin.get()));
      left = std::move(bin);
    }
  }
  StatusOr<ExprPtr> Or() { return BinaryChain(&Parser::And, {"or"}, true); }
  StatusOr<ExprPtr> And() { return BinaryChain(&Parser::Not, {"and"}, true); }
  StatusOr<ExprPtr> Not() {
    if (IsName("not")) {
      Nest nest(&expr_depth_);
      if (!nest.ok()) return TooDeep("expressions");
      ExprPtr e = Make(Expr::Kind::kUnary);
      ++i_;
      e->name = "not";
      SKRULL_ASSIGN_OR_RETURN(e->operand, Not());
      SKRULL_RETURN_IF_ERROR(Seal(e.get()));
      return e;
    }
    return Compare();
  }
  StatusOr<ExprPtr> Compare() {
    SKRULL_ASSIGN_OR_RETURN(ExprPtr left, Math1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      for (const char* o : {"==", "!=", "<", "<=", ">", ">="}) {
        if (IsOp(o)) op = o;
      }
      if (op.empty() && IsName("in")) op = "in";
      if (op.empty() && IsName("not") && IsName("in", 1)) op = "not in";
      if (op.empty()) break;
      i_ += op == "not in" ? 2 : 1;
      if (!cmp) {
        cmp = Make(Expr::Kind::kCompare);
        cmp->operand = std::move(left);
      }
      cmp->ops.push_back(op);
      SKRULL_ASSIGN_OR_RETURN(ExprPtr right, Math1());
      cmp->items.push_back(std::move(right));
      SKRULL_RETURN_IF_ERROR(Seal(cmp.get()));
    }
    return cmp ? std::move(cmp) : std::move(left);
  }
  StatusOr<ExprPtr> Math1() { return BinaryChain(&Parser::Concat, {"+", "-"}, false); }
  StatusOr<ExprPtr> Concat() { return BinaryChain(&Parser::Math2, {"~"}, false); }
  StatusOr<ExprPtr> Math2() { return BinaryChain(&Parser::Pow, {"*", "/", "//", "%"}, false); }
  StatusOr<ExprPtr> Pow() { return BinaryChain(&Parser::UnaryWithFilters, {"**"}, false); }
  StatusOr<ExprPtr> UnaryWithFilters() { return Unary(true); }

  StatusOr<ExprPtr> Unary(bool with_filter) {
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      Nest nest(&expr_depth_);
      if (!nest.ok()) return TooDeep("expressions");
      node = Make(Expr::Kind::kUnary);
      node->name = Next().value;
      SKRULL_ASSIGN_OR_RETURN(node->operand, Unary(false));
      SKRULL_RETURN_IF_ERROR(Seal(node.get()));
    } else {
      SKRULL_ASSIGN_OR_RETURN(node, Primary());
    }
    SKRULL_ASSIGN_OR_RETURN(node, Postfix(std::move(node)));
    if (with_filter) {
      SKRULL_ASSIGN_OR_RETURN(node, Filters(std::move(node)));
    }
    return node;
  }

  StatusOr<ExprPtr> Primary() {
    const Token& tok = Peek();
    if (tok.kind == K::kName) {
      ++i_;
      const std::string& v = tok.value;
      ExprPtr e = Make(Expr::Kind::kLiteral);
      if (v == "true" || v == "True") {
        e->value = Value::Bool(true);
      } else if (v == "false" || v == "False") {
        e->value = Value::Bool(false);
      } else if (v == "none" || v == "None") {
        e->value = Value::None();
      } else {
        e->kind = Expr::Kind::kName;
        e->name = v;
      }
      return e;
    }
    if (tok.kind == K::kString) {
      std::string s;
      while (Peek().kind == K::kString) s += Next().value;  // adjacent literals join
      ExprPtr e = Make(Expr::Kind::kLiteral);
      e->value = Value::String(std::move(s));
      return e;
    }
    if (tok.kind == K::kInt || tok.kind == K::kFloat) {
      ++i_;
      ExprPtr e = Make(Expr::Kind::kLiteral);
      if (tok.kind == K::kInt) {
        errno = 0;
        long long v = std::strtoll(tok.value.c_str(), nullptr, 10);
        if (errno != 0) return Error("integer literal out of range: " + tok.value);
        e->value = Value::Int(v);
      } else {
        e->value = Value::Float(std::strtod(tok.value.c_str(), nullptr));
      }
      return e;
    }
    if (IsOp("(")) return Parenthesized();
    if (IsOp("[")) return ListLiteral();
    if (IsOp("{")) return DictLiteral();
    return Error("unexpected '" + tok.value + "' in an expression");
  }

  // ( ... ): a parenthesized expression or a tuple.
  StatusOr<ExprPtr> Parenthesized() {
    ++i_;
    if (IsOp(")")) {
      ++i_;
      ExprPtr e = Make(Expr::Kind::kTuple);
      return e;
    }
    SKRULL_ASSIGN_OR_RETURN(ExprPtr first, Expression());
    if (!IsOp(",")) {
      SKRULL_RETURN_IF_ERROR(ExpectOp(")"));
      return first;
    }
    ExprPtr tuple = Make(Expr::Kind::kTuple);
    tuple->items.push_back(std::move(first));
    while (IsOp(",")) {
      ++i_;
      if (IsOp(")")) break;
      SKRULL_ASSIGN_OR_RETURN(ExprPtr item, Expression());
      tuple->items.push_back(std::move(item));
    }
    SKRULL_RETURN_IF_ERROR(ExpectOp(")"));
    SKRULL_RETURN_IF_ERROR(Seal(tuple.get()));
    return tuple;
  }

  StatusOr<ExprPtr> ListLiteral() {
    ++i_;
    ExprPtr list = Make(Expr::Kind::kList);
    while (!IsOp("]")) {
      SKRULL_ASSIGN_OR_RETURN(ExprPtr item, Expression());
      list->items.push_back(std::move(item));
      if (!IsOp(",")) break;
      ++i_;
    }
    SKRULL_RETURN_IF_ERROR(ExpectOp("]"));
    SKRULL_RETURN_IF_ERROR(Seal(list.get()));
    return list;
  }

  StatusOr<ExprPtr> DictLiteral() {
    ++i_;
    ExprPtr dict = Make(Expr::Kind::kDict);
    while (!IsOp("}")) {
      SKRULL_ASSIGN_OR_RETURN(ExprPtr key, Expression());
      SKRULL_RETURN_IF_ERROR(ExpectOp(":"));
      SKRULL_ASSIGN_OR_RETURN(ExprPtr value, Expression());
      dict->keys.push_back(std::move(key));
      dict->items.push_back(std::move(value));
      if (!IsOp(",")) break;
      ++i_;
    }
    SKRULL_RETURN_IF_ERROR(ExpectOp("}"));
    SKRULL_RETURN_IF_ERROR(Seal(dict.get()));
    return dict;
  }

  Status CallArguments(Expr* call) {
    SKRULL_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (Peek().kind == K::kName && IsOp("=", 1)) {
        std::string key = Next().value;
        ++i_;
        SKRULL_ASSIGN_OR_RETURN(ExprPtr value, Expression());
        call->keywords.emplace_back(std::move(key), std::move(value));
      } else {
        if (!call->keywords.empty()) return Error("positional argument after keyword argument");
        SKRULL_ASSIGN_OR_RETURN(ExprPtr value, Expression());
        call->items.push_back(std::move(value));
      }
      if (!IsOp(",")) break;
      ++i_;
    }
    return ExpectOp(")");
  }

  StatusOr<ExprPtr> Subscript(ExprPtr target) {
    // [a], [a:b], [a:b:c], [::c]
    ExprPtr parts[3];
    int colons = 0;
    for (int k = 0; k < 3; ++k) {
      if (!IsOp(":") && !IsOp("]")) {
        SKRULL_ASSIGN_OR_RETURN(parts[k], Expression());
      }
      if (k < 2 && IsOp(":")) {
        ++i_;
        ++colons;
      } else {
        break;
      }
    }
    SKRULL_RETURN_IF_ERROR(ExpectOp("]"));
    ExprPtr e = Make(colons == 0 ? Expr::Kind::kGetItem : Expr::Kind::kSlice);
    e->operand = std::move(target);
    if (colons == 0) {
      if (!parts[0]) return Error("empty subscript []");
      e->items.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) e->items.push_back(std::move(p));
    }
    SKRULL_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  StatusOr<ExprPtr> Postfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        ++i_;
        if (Peek().kind == K::kInt) {
          ExprPtr e = Make(Expr::Kind::kGetItem);
          ExprPtr index = Make(Expr::Kind::kLiteral);
          index->value = Value::Int(std::strtoll(Next().value.c_str(), nullptr, 10));
          e->operand = std::move(node);
          e->items.push_back(std::move(index));
          SKRULL_RETURN_IF_ERROR(Seal(e.get()));
          node = std::move(e);
          continue;
        }
        ExprPtr e = Make(Expr::Kind::kGetAttr);
        SKRULL_ASSIGN_OR_RETURN(e->name, ExpectName());
        e->operand = std::move(node);
        SKRULL_RETURN_IF_ERROR(Seal(e.get()));
        node = std::move(e);
      } else if (IsOp("[")) {
        ++i_;
        SKRULL_ASSIGN_OR_RETURN(node, Subscript(std::move(node)));
      } else if (IsOp("(")) {
        ExprPtr e = Make(Expr::Kind::kCall);
        e->operand = std::move(node);
        SKRULL_RETURN_IF_ERROR(CallArguments(e.get()));
        SKRULL_RETURN_IF_ERROR(Seal(e.get()));
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> Filters(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        ++i_;
        ExprPtr f = Make(Expr::Kind::kFilter);
        SKRULL_ASSIGN_OR_RETURN(f->name, ExpectName());
        while (IsOp(".")) {  // dotted filter names
          ++i_;
          SKRULL_ASSIGN_OR_RETURN(std::string more, ExpectName());
          f->name += "." + more;
        }
        if (IsOp("(")) SKRULL_RETURN_IF_ERROR(CallArguments(f.get()));
        f->operand = std::move(node);
        SKRULL_RETURN_IF_ERROR(Seal(f.get()));
        node = std::move(f);
      } else if (IsName("is")) {
        ++i_;
        ExprPtr t = Make(Expr::Kind::kTest);
        if (IsName("not")) {
          ++i_;
          t->negated = true;
        }
        SKRULL_ASSIGN_OR_RETURN(t->name, ExpectName());
        if (IsOp("(")) {
          SKRULL_RETURN_IF_ERROR(CallArguments(t.get()));
        } else if ((Peek().kind == K::kName || Peek().kind == K::kString ||
                    Peek().kind == K::kInt || Peek().kind == K::kFloat || IsOp("[") || IsOp("{")) &&
                   !IsName("else") && !IsName("or") && !IsName("and") && !IsName("is") &&
                   !IsName("if") && !IsName("in") && !IsName("not")) {
          SKRULL_ASSIGN_OR_RETURN(ExprPtr arg, Primary());
          SKRULL_ASSIGN_OR_RETURN(arg, Postfix(std::move(arg)));
          t->items.push_back(std::move(arg));
        }
        t->operand = std::move(node);
        SKRULL_RETURN_IF_ERROR(Seal(t.get()));
        node = std::move(t);
      } else if (IsOp("(")) {
        ExprPtr e = Make(Expr::Kind::kCall);
        e->operand = std::move(node);
        SKRULL_RETURN_IF_ERROR(CallArguments(e.get()));
        SKRULL_RETURN_IF_ERROR(Seal(e.get()));
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int expr_depth_ = 0;   // Nest levels of expressions being parsed
  int block_depth_ = 0;  // Nest levels of blocks being parsed
};

}  // namespace

StatusOr<NodeList> Parse(const std::vector<Token>& tokens) { return Parser(tokens).Template(); }

}  // namespace skrull::jinja
