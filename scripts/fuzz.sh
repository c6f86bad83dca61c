#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets in fuzz/ with clang (ASan + UBSan,
# -DSKRULL_BUILD_FUZZERS=ON) into build-fuzz/ (separate from build/), runs each
# for a bounded time, and merges what it found into the checked-in corpus.
# Not part of .ci/run; the corpus it leaves is replayed there by the CTest
# tests fuzz_<target>_replay (see fuzz/CMakeLists.txt and docs/architecture.md).
#
#   scripts/fuzz.sh                     # every target, 60 s each
#   scripts/fuzz.sh -t 300 job_yaml     # one target, 5 minutes
#   FUZZ_SECONDS=120 scripts/fuzz.sh    # the same as -t 120
#
# Options:
#   -t, --time SECONDS   run time per target (env FUZZ_SECONDS, default 60)
#   --timeout SECONDS    one input running longer is a failure (env
#                        FUZZ_TIMEOUT, default 10)
#   --rss-mb MB          memory limit per input (env FUZZ_RSS_MB, default 2048)
#   --no-merge           leave fuzz/corpus/ untouched
#   --build-only         build the fuzzers and stop
#   TARGET...            names of fuzz/<TARGET>_fuzzer.cc (default: all)
#
# After each run, the inputs that add coverage are merged into
# fuzz/corpus/<target>/ with libFuzzer's -merge=1 (minimised, by edge
# coverage: the files named by content hash are replaced by a minimal set;
# hand-named seed-* and crash-* files are always kept). Every crash, leak, timeout or out-of-memory input is
# minimised (-minimize_crash=1, crashes only) and copied into
# fuzz/corpus/<target>/ as crash-<target>-<hash> (or leak-, timeout-, oom-),
# which makes it a regression test; the script then exits 1 after running the
# remaining targets. Exit 2: bad usage or no clang.
# Needs: clang and libclang-rt-14-dev (Debian 12: apt-get install clang
# libclang-rt-14-dev). Uses ccache when it is installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SKRULL_ROOT"

seconds="${FUZZ_SECONDS:-60}"
timeout_s="${FUZZ_TIMEOUT:-10}"
rss_mb="${FUZZ_RSS_MB:-2048}"
merge=1
build_only=0
build="${FUZZ_BUILD:-$SKRULL_ROOT/build-fuzz}"
targets=()

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -t | --time) seconds="${2:?-t needs SECONDS}"; shift 2 ;;
    --timeout) timeout_s="${2:?--timeout needs SECONDS}"; shift 2 ;;
    --rss-mb) rss_mb="${2:?--rss-mb needs MB}"; shift 2 ;;
    --no-merge) merge=0; shift ;;
    --build-only) build_only=1; shift ;;
    -h | --help) usage ;;
    -*) log "unknown option $1"; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
for n in "$seconds" "$timeout_s" "$rss_mb"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { log "not a positive number of seconds/MB: '$n'"; exit 2; }
done

if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzzer.cc; do
    f="${f#fuzz/}"
    targets+=("${f%_fuzzer.cc}")
  done
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/${t}_fuzzer.cc" ] || { log "no fuzz target fuzz/${t}_fuzzer.cc"; exit 2; }
done

if ! command -v clang++ >/dev/null; then
  log "needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev"
  exit 2
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

log "configuring $build (clang, ASan + UBSan + libFuzzer)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DSKRULL_BUILD_FUZZERS=ON -DSKRULL_BUILD_TESTS=OFF \
  -DSKRULL_BUILD_BENCHMARKS=OFF -DSKRULL_BUILD_TRAINER=OFF "${launcher[@]}" >/dev/null
log "building ${targets[*]}"
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]/%/_fuzzer}"
[ "$build_only" = 1 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

is_hash_name() { [[ "$(basename "$1")" =~ ^[0-9a-f]{40}$ ]]; }

# merge_corpus TARGET BIN WORK: corpus := kept names + minimal set of the rest.
merge_corpus() {
  local t="$1" bin="$2" work="$3" corpus="fuzz/corpus/$1" f
  rm -rf "$work/merged" && mkdir -p "$work/merged" "$corpus"
  for f in "$corpus"/*; do
    [ -f "$f" ] && ! is_hash_name "$f" && cp "$f" "$work/merged/"
  done
  mkdir -p "$work/hashed"
  for f in "$corpus"/*; do
    [ -f "$f" ] && is_hash_name "$f" && cp "$f" "$work/hashed/"
  done
  # Edge coverage only (no hit counters): a few hundred files per target.
  "$bin" -merge=1 -use_counters=0 -timeout="$timeout_s" -rss_limit_mb="$rss_mb" \
    -artifact_prefix="$work/merge-" "$work/merged" "$work/hashed" "$work/new" \
    >"$work/merge.log" 2>&1 || {
    log "$t: merge failed (corpus left as it was); see $work/merge.log"
    return 1
  }
  for f in "$corpus"/*; do
    [ -f "$f" ] && is_hash_name "$f" && rm "$f"
  done
  for f in "$work/merged"/*; do
    is_hash_name "$f" && cp "$f" "$corpus/"
  done
  return 0
}

failed=0
summary=()
for t in "${targets[@]}"; do
  bin="$build/bin/${t}_fuzzer"
  work="$build/fuzz-work/$t"
  corpus="fuzz/corpus/$t"
  rm -rf "$work" && mkdir -p "$work/new" "$work/artifacts" "$corpus"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  log "$t: fuzzing for $seconds s (log: $work/fuzz.log)"
  rc=0
  started=$SECONDS
  "$bin" -max_total_time="$seconds" -timeout="$timeout_s" -rss_limit_mb="$rss_mb" \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" \
    "$work/new" "$corpus" >"$work/fuzz.log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)"
  took=$((SECONDS - started))
  result="ok"
  if [ "$rc" -ne 0 ]; then
    failed=1
    result="FAILED (exit $rc)"
    tail -n 60 "$work/fuzz.log" >&2
    for a in "$work/artifacts"/*; do
      [ -f "$a" ] || continue
      kind="$(basename "$a")"
      kind="${kind%%-*}"
      input="$a"
      if [ "$kind" = crash ]; then
        "$bin" -minimize_crash=1 -max_total_time=60 -timeout="$timeout_s" \
          -artifact_prefix="$work/minimize-" -exact_artifact_path="$work/minimized" "$a" \
          >"$work/minimize.log" 2>&1 || true
        [ -s "$work/minimized" ] && input="$work/minimized"
      fi
      name="$kind-$t-$(sha1sum "$input" | cut -c1-12)"
      cp "$input" "$corpus/$name"
      log "$t: $kind input saved as $corpus/$name (replay: $bin $corpus/$name)"
      result="$result, $corpus/$name"
    done
  fi
  added=0
  if [ "$merge" = 1 ]; then
    before="$(find "$corpus" -type f | wc -l)"
    merge_corpus "$t" "$bin" "$work" || failed=1
    added=$(($(find "$corpus" -type f | wc -l) - before))
  fi
  summary+=("$(printf '%-20s %6ss %12s execs  corpus %+d files  %s' "$t" "$took" \
    "${execs:-?}" "$added" "$result")")
done

log "summary"
printf '%s\n' "${summary[@]}" >&2
exit "$failed"
