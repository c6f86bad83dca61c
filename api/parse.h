// Private to api/: YAML -> typed JobSpec fields, before validation and
// defaults. See job_spec.h for the pipeline.
#ifndef SKRULL_API_PARSE_H_
#define SKRULL_API_PARSE_H_

#include <yaml-cpp/yaml.h>

#include <string>

#include "api/diagnostics.h"
#include "api/job_spec.h"

namespace skrull::api {

struct ParsedJobSpec {
  std::string api_version;  // as written; checked by validation
  std::string kind;
  JobSpec spec;       // fields not in the document keep their initializers
  FieldIndex fields;  // positions and rejected values, by field path
};

// Reads every field of `doc`. Wrong types, unknown and duplicate keys and
// unknown enum values go to `diag`; the fields they name keep their defaults
// and are listed in `fields.invalid`.
ParsedJobSpec ParseJobSpec(const YAML::Node& doc, Diagnostics* diag);

// Kubernetes ObjectMeta fields the API server writes; accepted in metadata and
// ignored, so `kubectl get skrulljob X -o yaml` output loads.
inline constexpr const char* kServerMetadataFields[] = {"uid",
                                                        "resourceVersion",
                                                        "generation",
                                                        "creationTimestamp",
                                                        "generateName",
                                                        "deletionTimestamp",
                                                        "deletionGracePeriodSeconds",
                                                        "managedFields",
                                                        "ownerReferences",
                                                        "finalizers",
                                                        "selfLink"};

}  // namespace skrull::api

#endif  // SKRULL_API_PARSE_H_
