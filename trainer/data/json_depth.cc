#include "trainer/data/json_depth.h"

#include <string>

namespace skrull::data {

bool JsonNestedDeeperThan(std::string_view line, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Status CheckJsonDepth(std::string_view line, std::string_view shape) {
  if (!JsonNestedDeeperThan(line)) return OkStatus();
  return InvalidArgumentError("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                              " levels; " + std::string(shape));
}

}  // namespace skrull::data
