// Parses lexed chat-template tokens into a tree (ast.h), with Jinja2's
// grammar and operator precedence. Statements: if/elif/else, for (tuple
// targets, `if` filter, else), set (incl. `ns.attr` and block set), macro,
// break/continue (loopcontrols), generation/endgeneration (transformers'
// assistant-mask tag: its body renders as is). Anything else is refused by
// name. Private to tokenizer/jinja. Thread safety: pure function.
#ifndef SKRULL_TOKENIZER_JINJA_PARSER_H_
#define SKRULL_TOKENIZER_JINJA_PARSER_H_

#include <vector>

#include "common/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace skrull::jinja {

// InvalidArgument "line N: ..." on a syntax error.
StatusOr<NodeList> Parse(const std::vector<Token>& tokens);

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_PARSER_H_
