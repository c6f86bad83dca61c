// A chat-template interpreter: the subset of Jinja2 that real Hugging Face
// chat templates use (Qwen2.5, Qwen3, Llama-3, Mistral and the like), with
// the environment transformers gives them (ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and loopcontrols; `tojson` as json.dumps with
// ensure_ascii=False; raise_exception(); strftime_now()), and Python's
// semantics for values, operators, filters, tests and str/dict methods.
// docs/tokenizer.md lists what is supported.
//
// Output strings keep provenance (value.h): bytes that came from tagged input
// strings stay marked in the result.
//
// Thread safety: a parsed Template is immutable; Render may run concurrently.
#ifndef SKRULL_TOKENIZER_JINJA_TEMPLATE_H_
#define SKRULL_TOKENIZER_JINJA_TEMPLATE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/value.h"

namespace skrull::jinja {

struct NodeListHolder;

struct RenderOptions {
  // strftime_now(format): the time to format; default: the local time now.
  std::function<std::string(const std::string& format)> strftime_now;
  // The work budget of one rendering (budget.h): bytes, steps, seconds.
  RenderLimits limits;
};

class Template {
 public:
  // InvalidArgument "line N: ..." on a syntax error or an unsupported tag.
  static StatusOr<std::unique_ptr<Template>> Parse(std::string_view source);
  ~Template();

  // Renders with `variables` as the template's globals (messages, bos_token,
  // ...). InvalidArgument "line N: ..." for runtime errors:
  // raise_exception("...") gives "raise_exception: ...", undefined
  // attributes, type errors, integer overflow, and the limits of
  // options.limits and budget.h, each named with the spec.data field that
  // raises it.
  StatusOr<TaggedString> Render(const ValueDict& variables,
                                const RenderOptions& options = RenderOptions()) const;

 private:
  Template();
  std::unique_ptr<NodeListHolder> nodes_;
};

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_TEMPLATE_H_
