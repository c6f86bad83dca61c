// Fuzz target: the SkrullJob YAML parser (api::LoadJobSpec: YAML -> parse ->
// validate -> defaults). Any input must end in a JobSpec or an InvalidArgument
// naming where the problem is, never a crash, a hang or unbounded memory. An
// accepted spec must survive its documented round trip:
// LoadJobSpec(ToYaml(s)) == s.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  skrull::StatusOr<skrull::api::JobSpec> spec = skrull::api::LoadJobSpec(text, "fuzz.yaml");
  if (!spec.ok()) {
    SKRULL_CHECK(spec.status().code() == skrull::StatusCode::kInvalidArgument)
        << spec.status().ToString();
    SKRULL_CHECK(!spec.status().message().empty());
    return 0;
  }
  (void)skrull::api::DescribeJobSpec(*spec);
  const std::string yaml = skrull::api::ToYaml(*spec);
  skrull::StatusOr<skrull::api::JobSpec> again = skrull::api::LoadJobSpec(yaml, "round-trip.yaml");
  SKRULL_CHECK(again.ok()) << "ToYaml output does not load: " << again.status().ToString()
                           << "\n--- ToYaml ---\n"
                           << yaml;
  SKRULL_CHECK(*again == *spec) << "LoadJobSpec(ToYaml(s)) != s\n--- ToYaml ---\n" << yaml;
  return 0;
}
