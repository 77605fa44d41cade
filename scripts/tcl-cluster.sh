#!/usr/bin/env bash
# Run Redis 7.0.15's own cluster test suite (tests/cluster, ./runtest-cluster) against shoal-server:
# the suite spawns up to 20 instances per file from src/redis-server with "cluster-enabled yes",
# "appendonly yes" and "enable-debug-command yes"; here src/redis-server is a wrapper that records
# each instance's pid and execs the server under test with the suite's arguments unchanged.
#
#   scripts/tcl-cluster.sh                          # every file of tests/cluster/tests
#   scripts/tcl-cluster.sh 03-failover-loop 09      # chosen files (name, its number, or a prefix)
#   SHOAL_SERVER=/usr/bin/redis-server scripts/tcl-cluster.sh 03   # the same file against Redis
#
# Each file runs alone (--single) with fresh instances, bounded by TCL_CLUSTER_TIMEOUT seconds
# (default 600; on a timeout every instance of the file is stopped by its pid). Prints one line per
# file: GOOD, or the failed tests with their messages; then where the logs are. Instance logs
# (redis_N/log.txt) are kept only for files that did not pass.
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_SRC (default
# /tmp/src/redis-7.0.15), TCL_CLUSTER_TIMEOUT, TCL_CLUSTER_RESULTS (default a fresh
# /tmp/shoal-tests-cluster.XXXXXX). Instance ports: a base of 16000 + 512k (k random, 0-6) with bus
# ports 10000 above (a run holds its block: scripts/tcl-ports.sh): below the ephemeral range, clear of
# tcl-suite.sh's 12000-15999 and 20000-25887 and of
# the suite's default 30000, so concurrent runs do not collide.
# Exit status: 0 when every file printed GOOD, 1 otherwise, 2 on setup errors.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REDIS_SRC=${REDIS_SRC:-/tmp/src/redis-7.0.15}
TIMEOUT=${TCL_CLUSTER_TIMEOUT:-600}
log() { printf '[tcl-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

command -v tclsh >/dev/null || die "tclsh not found (apt-get install -y tcl)"
[[ -f $REDIS_SRC/tests/cluster/run.tcl && -x $REDIS_SRC/runtest-cluster ]] ||
  die "no Redis cluster suite at REDIS_SRC=$REDIS_SRC (see .ci/run for how it is fetched)"

if [[ -n ${SHOAL_SERVER:-} ]]; then
  SERVER=$(command -v "$SHOAL_SERVER" || true)
  [[ -n $SERVER && -x $SERVER ]] || die "SHOAL_SERVER=$SHOAL_SERVER is not an executable"
else
  SERVER=$ROOT/bin/shoal-server
  [[ -x $SERVER ]] || (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server) ||
    die "go build ./cmd/shoal-server failed"
fi
[[ $SERVER == /* ]] || SERVER=$PWD/$SERVER

ALL=()
for f in "$REDIS_SRC"/tests/cluster/tests/*.tcl; do ALL+=("$(basename "$f" .tcl)"); done
FILES=()
if (($# == 0)); then
  FILES=("${ALL[@]}")
else
  for want in "$@"; do
    want=$(basename "${want%.tcl}")
    n=0
    for f in "${ALL[@]}"; do
      if [[ $f == "$want" || $f == "$want"-* ]]; then FILES+=("$f"); n=$((n + 1)); fi
    done
    ((n > 0)) || die "no file $want in tests/cluster/tests"
  done
fi

RESULTS=${TCL_CLUSTER_RESULTS:-$(mktemp -d /tmp/shoal-tests-cluster.XXXXXX)}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

# A private copy of the suite: it writes into tests/cluster/tmp and runs ../../../src/redis-server.
WORK=$RESULTS/work
rm -rf "$WORK" && mkdir -p "$WORK/src"
cp -a "$REDIS_SRC/runtest-cluster" "$REDIS_SRC/tests" "$WORK/"
for b in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
  if command -v "$b" >/dev/null; then ln -sf "$(command -v "$b")" "$WORK/src/$b"; fi
done
# The wrapper records its pid (exec keeps it) so that a file that times out can have its
# instances stopped by pid.
cat >"$WORK/src/redis-server" <<EOF
#!/bin/sh
echo \$\$ >>"$WORK/pids"
exec "$SERVER" "\$@"
EOF
chmod +x "$WORK/src/redis-server"

# A block no other run of this script holds (an flock, scripts/tcl-ports.sh) and free on the probed ports.
# shellcheck source=scripts/tcl-ports.sh
source "$ROOT/scripts/tcl-ports.sh"
claim_port_block tcl-cluster 16000 512 7 0 19 10000 || die "no free port range found"
BASE=$PORT_BLOCK
sed -i -e "s/^set ::redis_base_port .*/set ::redis_base_port $BASE/" \
  -e "s/^set ::redis_port_count .*/set ::redis_port_count 512/" "$WORK/tests/instances.tcl"

# Skips (scripts/tcl-cluster-skips.txt, "file | test name | reason"): the copy's `test` proc
# prints "<name>: SKIPPED" for the names listed for the file being run (written to
# tests/shoal-skips.tcl before each file). A skipped test's body does not run, so the tests after
# it run on the state it would have left only where that state does not matter (see the reasons).
SKIPS_FILE=$ROOT/scripts/tcl-cluster-skips.txt
[[ ${TCL_CLUSTER_SKIPS:-1} == 1 ]] || SKIPS_FILE=/dev/null
python3 - "$WORK/tests/instances.tcl" "$WORK/tests/shoal-skips.tcl" <<'PY'
import sys
path, skips = sys.argv[1], sys.argv[2]
src = open(path).read()
head = "proc test {descr code} {\n"
assert head in src, "tests/instances.tcl has no proc test"
src = src.replace(head, head + """    if {[info exists ::shoal_skip] && [lsearch -exact $::shoal_skip $descr] >= 0} {
        puts "[clock format [clock seconds] -format %H:%M:%S]> $descr: SKIPPED"
        return
    }
""", 1)
src = src.replace("source ../support/test.tcl\n", "source ../support/test.tcl\nsource {%s}\n" % skips, 1)
open(path, "w").write(src)
PY
write_skips() { # file
  local f=$1 file name
  {
    echo "set ::shoal_skip {}"
    while IFS='|' read -r file name _; do
      file=${file#"${file%%[! ]*}"} file=${file%"${file##*[! ]}"}
      name=${name#"${name%%[! ]*}"} name=${name%"${name##*[! ]}"}
      [[ -z $file || $file == \#* || $file != "$f" ]] && continue
      printf 'lappend ::shoal_skip {%s}\n' "$name"
    done <"$SKIPS_FILE"
  } >"$WORK/tests/shoal-skips.tcl"
}

stop_leftovers() {
  [[ -f $WORK/pids ]] || return 0
  local pid
  while read -r pid; do
    # only a process still running in this run's instance directories is ours
    if [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$WORK"/* ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  done <"$WORK/pids"
  rm -f "$WORK/pids"
}
# The copy of the suite goes at the end (the logs of failed files were moved out of it).
trap 'stop_leftovers; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

log "server $SERVER, ports from $BASE, results in $RESULTS"
fails=0
summary=$RESULTS/summary.txt
: >"$summary"
for f in "${FILES[@]}"; do
  start=$(date +%s)
  rm -rf "$WORK/tests/cluster/tmp" && mkdir -p "$WORK/tests/cluster/tmp"
  write_skips "$f"
  set +e
  (cd "$WORK" && timeout -k 20 "$TIMEOUT" ./runtest-cluster --single "tests/$f.tcl" --dont-clean \
    --config bind 127.0.0.1) >"$RESULTS/$f.log" 2>&1
  rc=$?
  set -e
  stop_leftovers
  secs=$(($(date +%s) - start))
  plain=$(sed 's/\x1b\[[0-9;]*m//g' "$RESULTS/$f.log")
  if ((rc == 0)) && grep -q 'GOOD! No errors' <<<"$plain"; then
    verdict="GOOD"
    skipped=$(grep -c ': SKIPPED$' <<<"$plain" || true)
    ((skipped == 0)) || verdict="GOOD ($skipped skipped: $(grep ': SKIPPED$' <<<"$plain" | sed -E 's/^[0-9:]+> //; s/: SKIPPED$//' | paste -sd';' -))"
    rm -rf "$WORK/tests/cluster/tmp"
  else
    fails=$((fails + 1))
    if ((rc == 124 || rc == 137)); then
      verdict="TIMEOUT after ${TIMEOUT}s, last test: $(grep -E '^[0-9:]+> ' <<<"$plain" | tail -1 | cut -c1-120)"
    else
      verdict=$(grep -E 'FAILED|[Ee]xception|WARNING: Aborting|>>>>>>>>' <<<"$plain" | grep -v '^FAILED: caught an error\|Jumping to next unit' | head -3 | cut -c1-200 | paste -sd'|' -)
      [[ -n $verdict ]] || verdict="exit $rc"
    fi
    rm -rf "$RESULTS/$f.instances" && mv "$WORK/tests/cluster/tmp" "$RESULTS/$f.instances" 2>/dev/null || true
  fi
  printf '%-34s %4ss  %s\n' "$f" "$secs" "$verdict" | tee -a "$summary"
done
log "$((${#FILES[@]} - fails)) of ${#FILES[@]} files GOOD; logs: $RESULTS/<file>.log, instance logs of failed files: $RESULTS/<file>.instances/redis_N/log.txt"
((fails == 0))
