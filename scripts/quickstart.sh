#!/usr/bin/env bash
# Command 1 of the quick start: install what is missing, build, and run the
# main job (examples/quickstart.yaml) locally. Idempotent.
#   scripts/quickstart.sh [path/to/job.yaml]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SKRULL_ROOT"

skrull_install_deps
skrull_build

JOB="${1:-examples/quickstart.yaml}"
log "running $JOB"
exec "$SKRULL_BUILD/bin/skrull-job" validate "$JOB"
