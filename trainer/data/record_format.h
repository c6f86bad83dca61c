// Private to trainer/data: the record formats users have (docs/job-spec.md,
// spec.data.format and spec.data.fields) rewritten as the text-jsonl record
// the tokenizer path already reads, {"text"} or {"messages": [{role,
// content}]}. Chat-like records become messages, so their loss mask follows
// the chat template (assistant turns only), exactly as text-jsonl's do.
//
//   alpaca    {"instruction", "input"?, "output", "system"?} (Stanford
//             Alpaca; LLaMA-Factory's alpaca format): [system], user =
//             instruction, then "\n" and input when input is non-empty,
//             assistant = output.
//   sharegpt  {"conversations": [{"from", "value"}, ...], "system"?}
//             (LLaMA-Factory's sharegpt format): from "system" (first turn
//             only), "human" or "user" -> user, "gpt" or "assistant" ->
//             assistant; other role values are an error naming them.
//   text-jsonl with a mapping: the mapped names read as text, messages,
//             role and content.
// `fields` maps a standard name (instruction, conversations, from, human, ...)
// to the name the file uses; unmapped names are standard. Messages name the
// missing or mistyped field, its standard name and spec.data.fields; the
// Dataset adds FILE:LINE.
#ifndef SKRULL_TRAINER_DATA_RECORD_FORMAT_H_
#define SKRULL_TRAINER_DATA_RECORD_FORMAT_H_

#include <map>
#include <string>
#include <string_view>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::data {

// Whether lines of `format` with `fields` need RewriteAsTextRecord before
// ParseTextLine: alpaca, sharegpt, and text-jsonl with a mapping.
bool NeedsRewrite(api::DataFormat format, const std::map<std::string, std::string>& fields);

// One line of `format` -> a text-jsonl line. REQUIRES: NeedsRewrite(format, fields).
StatusOr<std::string> RewriteAsTextRecord(std::string_view line, api::DataFormat format,
                                          const std::map<std::string, std::string>& fields);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_RECORD_FORMAT_H_
