#include "trainer/data/json_depth.h"

#include <string>

#include "common/json_fields.h"

namespace skrull::data {

bool JsonNestedDeeperThan(std::string_view line, int max_depth) {
  return FindJsonNestingBeyond(line, max_depth).has_value();
}

Status CheckJsonDepth(std::string_view line, std::string_view shape) {
  if (!JsonNestedDeeperThan(line)) return OkStatus();
  return InvalidArgumentError("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                              " levels; " + std::string(shape));
}

}  // namespace skrull::data
