// Filters, tests, and str/dict methods of the chat-template interpreter, with
// Python / Jinja2 semantics. Private to tokenizer/jinja.
#ifndef SKRULL_TOKENIZER_JINJA_BUILTINS_H_
#define SKRULL_TOKENIZER_JINJA_BUILTINS_H_

#include <functional>
#include <string>

#include "common/status.h"
#include "tokenizer/jinja/value.h"

namespace skrull::jinja {

// Calls a filter by name with args (the filtered value first in positional).
// `apply_test` lets select/reject call tests; `apply_filter` lets map call
// filters. NotFound "no filter named X" for unknown names.
using TestFn = std::function<StatusOr<bool>(const std::string&, CallArgs&)>;
using FilterFn = std::function<StatusOr<Value>(const std::string&, CallArgs&)>;
StatusOr<Value> ApplyFilter(const std::string& name, CallArgs& args, const TestFn& apply_test,
                            const FilterFn& apply_filter);
StatusOr<bool> ApplyTest(const std::string& name, CallArgs& args);

// A bound method of a str or dict value (`s.strip`, `d.items`), or
// Undefined when `object` has no such method.
Value BoundMethod(const Value& object, const std::string& name);

// Python's a < b for ints, floats, strings and lists; TypeError otherwise.
StatusOr<bool> LessThan(const Value& a, const Value& b);

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_BUILTINS_H_
