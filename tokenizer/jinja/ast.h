// The syntax tree of a parsed chat template. Private to tokenizer/jinja.
#ifndef SKRULL_TOKENIZER_JINJA_AST_H_
#define SKRULL_TOKENIZER_JINJA_AST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace skrull::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // items
    kTuple,     // items
    kDict,      // keys[i]: items[i]
    kGetAttr,   // operand.name
    kGetItem,   // operand[items[0]]
    kSlice,     // operand[items[0]:items[1]:items[2]] (null = omitted)
    kCall,      // operand(items..., keywords...)
    kFilter,    // operand | name(items..., keywords...)
    kTest,      // operand is [not] name(items...)
    kUnary,     // name in {"-", "+", "not"} of operand
    kBinary,    // operand name items[0]: + - * / // % ** ~ and or
    kCompare,   // operand (ops[i] items[i])...: == != < <= > >= in "not in"
    kCondition  // items[0] if operand else items[1] (items[1] may be null)
  };
  Kind kind;
  int line = 0;
  int depth = 1;  // levels of this tree (parser.cc bounds it)
  Value value;
  std::string name;
  bool negated = false;
  ExprPtr operand;
  std::vector<ExprPtr> items;
  std::vector<ExprPtr> keys;
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct Node;
using NodeList = std::vector<std::unique_ptr<Node>>;

// An assignment target: a name, `a.b` (namespace attribute) or a tuple.
struct Target {
  std::vector<std::string> names;  // several = tuple unpacking
  std::string attribute;           // set when the target is names[0].attribute
};

struct Node {
  enum class Kind {
    kText,    // text
    kOutput,  // {{ expr }}
    kIf,      // branches: (condition, body)...; else_body
    kFor,     // target in expr [if filter]: body; else_body
    kSet,     // target = expr, or target = rendered body (block set)
    kMacro,   // name(params = defaults): body
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  Target target;
  std::vector<std::pair<ExprPtr, NodeList>> branches;
  NodeList body;
  NodeList else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults
};

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_AST_H_
