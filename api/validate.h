// Private to api/: range and cross-field rules over parsed fields. The public
// entry points are LoadJobSpec and ValidateJobSpec (job_spec.h).
#ifndef SKRULL_API_VALIDATE_H_
#define SKRULL_API_VALIDATE_H_

#include "api/diagnostics.h"
#include "api/parse.h"

namespace skrull::api {

// Adds one error to `diag` for every rule `parsed` breaks. Fields listed in
// parsed.fields.invalid were reported by the parser and are skipped here, as
// are the cross-field rules that involve them. Accepts values before or after
// ApplyDefaults.
void CollectValidationErrors(const ParsedJobSpec& parsed, Diagnostics* diag);

}  // namespace skrull::api

#endif  // SKRULL_API_VALIDATE_H_
