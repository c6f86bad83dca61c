// Fuzz target: the sequence-lengths file that `skrull-plan` reads
// (scheduler/cli/lengths_file.h). Any text must end in a list of positive
// lengths or an InvalidArgument naming the bad lines, never a crash; an
// accepted list survives FormatLengths -> ParseLengths unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/cli/lengths_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  skrull::StatusOr<std::vector<int64_t>> lengths =
      skrull::scheduler::cli::ParseLengths(text, "fuzz.lengths");
  if (!lengths.ok()) {
    SKRULL_CHECK(lengths.status().code() == skrull::StatusCode::kInvalidArgument)
        << lengths.status().ToString();
    SKRULL_CHECK(lengths.status().message().rfind("fuzz.lengths", 0) == 0)
        << "error does not name the file: " << lengths.status().message();
    return 0;
  }
  SKRULL_CHECK(!lengths->empty());
  for (int64_t length : *lengths) SKRULL_CHECK(length > 0) << length;
  const std::string formatted = skrull::scheduler::cli::FormatLengths(*lengths, "round trip");
  skrull::StatusOr<std::vector<int64_t>> again =
      skrull::scheduler::cli::ParseLengths(formatted, "round-trip.lengths");
  SKRULL_CHECK(again.ok()) << again.status().ToString();
  SKRULL_CHECK(*again == *lengths) << "FormatLengths -> ParseLengths changed the lengths";
  return 0;
}
