// Private to trainer/data: a bound on how deeply a JSONL line may nest, checked
// before the line is parsed. Parsed values are printed (error previews) and
// walked (chat templates) recursively, so a hostile line nested tens of
// thousands of levels deep would exhaust the stack; no real data line nests
// more than a few levels.
#ifndef SKRULL_TRAINER_DATA_JSON_DEPTH_H_
#define SKRULL_TRAINER_DATA_JSON_DEPTH_H_

#include <string_view>

#include "common/status.h"

namespace skrull::data {

// Deepest nesting of arrays and objects a data line may have.
inline constexpr int kMaxJsonDepth = 64;

// True when `line` opens more than `max_depth` nested arrays/objects at some
// point. Brackets inside strings (escapes honoured) do not count. One linear
// pass, no allocation; it does not validate the JSON (the parser does).
bool JsonNestedDeeperThan(std::string_view line, int max_depth = kMaxJsonDepth);

// InvalidArgument "JSON nested deeper than 64 levels; <shape>" when `line`
// nests deeper than kMaxJsonDepth, else OK. `shape` describes a valid line.
Status CheckJsonDepth(std::string_view line, std::string_view shape);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_JSON_DEPTH_H_
