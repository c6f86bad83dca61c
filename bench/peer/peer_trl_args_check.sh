#!/usr/bin/env bash
# CTest bench_peer_trl_args: bench/peer_trl.sh checks its arguments before it
# makes a venv or runs anything, and --dry-run prints the plan and makes
# nothing. The measurement itself is not part of CI (docs/performance.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
script="$root/bench/peer_trl.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_refused EXPECTED_MESSAGE ARGS...: exit 2 with the message, nothing made.
expect_refused() {
  local want="$1" rc=0
  shift
  "$script" --out "$tmp/out" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
  [ "$rc" -eq 2 ] || fail "$* exited $rc, want 2"
  grep -qF -- "$want" "$tmp/stderr" || fail "$*: no '$want' in: $(cat "$tmp/stderr")"
  [ ! -e "$tmp/out" ] || fail "$* made $tmp/out"
}

expect_refused "argument --samples: must be in 16..100000 (got 3)" --samples 3
expect_refused "argument --batch: expected an integer, got 'x'" --batch x
expect_refused "argument --lr: must be in (0, 1) (got 2.0)" --lr 2
# The policy names come from scheduler/policy_name.h, so a new policy is known here.
expect_refused "skrull-paper" --policies skrull,nope
expect_refused "unrecognized arguments: --bogus" --bogus

"$script" --dry-run --out "$tmp/out" --samples 40 --policies skrull,cp-all,balanced-cp >"$tmp/plan" ||
  fail "--dry-run exited $?"
for want in "skrull skrull: " "skrull cp-all: " "skrull balanced-cp: " "TRL SFTTrainer: " \
  "--nproc_per_node 2" "skrull-make-data --out $tmp/out/data.jsonl --n 40" "DP=2 x CP=1, bucket 2048"; do
  grep -qF -- "$want" "$tmp/plan" || fail "the plan lacks '$want':"$'\n'"$(cat "$tmp/plan")"
done
[ ! -e "$tmp/out" ] || fail "--dry-run made $tmp/out"
echo "PASS: arguments checked, dry run made nothing"
