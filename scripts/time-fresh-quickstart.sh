#!/usr/bin/env bash
# Times command 1 of the README (scripts/quickstart.sh) as a new user meets it:
# a fresh Debian 12 root (debootstrap minbase: no compiler, no ccache, no
# packages of ours), a fresh clone of this checkout's HEAD, then the whole
# command, packages included, nice'd. Prints the seconds to the trainer's
# first step ("step 1/") and to the end of the job, and the load average of
# this machine before and after (other work shares its cores).
#   sudo scripts/time-fresh-quickstart.sh [JOB.yaml]   # default examples/quickstart.yaml
# Not part of .ci/run: it downloads the packages every time (that is what it
# measures). The base root is made once in SKRULL_FRESH_ROOT (default
# /var/cache/skrull/fresh-bookworm-root) and copied per run, so no run sees
# another's packages; the copy and the log stay in $SKRULL_FRESH_ROOT-run/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ "$(id -u)" -eq 0 ] || { log "time-fresh-quickstart.sh needs root (debootstrap, chroot)"; exit 2; }
job="${1:-examples/quickstart.yaml}"
base="${SKRULL_FRESH_ROOT:-/var/cache/skrull/fresh-bookworm-root}"
run="$base-run"
mirror="${SKRULL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ ! -x "$base/usr/bin/apt-get" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
  log "debootstrap Debian 12 (minbase) into $base, once"
  rm -rf "$base"
  debootstrap --variant=minbase bookworm "$base" "$mirror" >"$base.debootstrap.log" 2>&1 ||
    { log "debootstrap failed; see $base.debootstrap.log"; exit 2; }
fi

# A run killed before its trap may have left its mounts: never remove through them.
umount -R -l "$run/dev" "$run/proc" "$run/sys" 2>/dev/null || true
if grep -q " $run/" /proc/mounts; then log "still mounted under $run: unmount it first"; exit 2; fi
rm -rf --one-file-system "$run"
cp -a "$base" "$run"
cp /etc/resolv.conf "$run/etc/resolv.conf"
# /dev with its submounts (pts, shm) as a slave, so nothing here propagates
# back; one recursive unmount undoes all of it, whatever way this script ends,
# after the processes still running in the root (if it is cut short) end.
cleanup() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$run" ] && kill "${p#/proc/}" 2>/dev/null
  done
  umount -R -l "$run/dev" "$run/proc" "$run/sys" 2>/dev/null || true
}
trap cleanup EXIT
trap "exit 130" INT TERM
mount --rbind /dev "$run/dev" && mount --make-rslave "$run/dev"
mount -t proc proc "$run/proc"
mount -t sysfs sysfs "$run/sys"
git clone -q "$SKRULL_ROOT" "$run/root/skrull"
log "fresh clone of $(git -C "$SKRULL_ROOT" rev-parse --short HEAD) in $run/root/skrull"

out="$run/quickstart.log"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
start="$(date +%s)"
# The CPU seconds of everything the command ran (bash's `time`): about what
# it would take on an idle machine of this many cores, divided by them.
(
  TIMEFORMAT='%U s user + %S s system CPU'
  time chroot "$run" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 nice -n 10 bash -c "cd /root/skrull && scripts/quickstart.sh $job" >"$out" 2>&1
) 2>"$run/cpu.txt" &
pid=$!
first=""
while kill -0 "$pid" 2>/dev/null; do
  if [ -z "$first" ] && grep -q 'step 1/' "$out" 2>/dev/null; then
    first=$(($(date +%s) - start))
    log "first step after ${first} s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  fi
  sleep 2
done
rc=0
wait "$pid" || rc=$?
total=$(($(date +%s) - start))
[ -n "$first" ] || first="never"
log "exit $rc; log: $out"
echo "fresh clone -> first step: ${first} s; -> end of job: ${total} s;" \
  "load average before: ${load_before}; after: $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$(nproc) cores; $(cat "$run/cpu.txt");" \
  "packages: $(grep -o '[0-9]* newly installed' "$out" || echo none)"
exit "$rc"
