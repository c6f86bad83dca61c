// Tokenizes a Jinja2 template the way transformers configures Jinja2 for chat
// templates: trim_blocks and lstrip_blocks on, `{%-`/`-%}` whitespace control,
// `+` to opt out, comments dropped, newlines normalized to \n and one trailing
// newline of the source removed (keep_trailing_newline=False).
// Private to tokenizer/jinja. Thread safety: pure function.
#ifndef SKRULL_TOKENIZER_JINJA_LEXER_H_
#define SKRULL_TOKENIZER_JINJA_LEXER_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::jinja {

struct Token {
  enum class Kind {
    kData,        // template text, literal
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // value: the unescaped literal
    kInt,
    kFloat,
    kOp,  // + - * / // % ** ~ ( ) [ ] { } , . : | = == != < <= > >=
    kEof,
  };
  Kind kind;
  std::string value;
  int line;
};

// InvalidArgument "line N: ..." for an unterminated tag, string or comment,
// or a character that starts no token.
StatusOr<std::vector<Token>> Lex(std::string_view source);

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_LEXER_H_
