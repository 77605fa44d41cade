#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# The cost of ACL checks (issue 20): SET and GET -P 16 as the default user (every permission: one
# flag test) and as a user restricted to a key pattern (~key:*, every key checked against it),
# shoal-server and redis-server in the same run (interleaved, REPEATS times each, a fresh server per
# repeat, both users measured on it):
#   redis-benchmark -t set,get -P 16 -r 1000000 -n $ACL_REQUESTS -d 32 -c $ACL_CLIENTS [--user bench -a pw]
# The table gives the medians of rps and of the server's CPU per request (on-CPU time of all its
# threads, as in scripts/bench.sh), and restricted/default ratios per server.
#
#   scripts/bench-acl.sh
#   REPEATS=1 ACL_REQUESTS=200000 scripts/bench-acl.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REPEATS (3), ACL_REQUESTS (500000), ACL_CLIENTS (50). Only the processes
# it starts are signalled, by PID, on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-acl %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli redis-benchmark timeout; do command -v "$t" >/dev/null || die "$t not found"; done
REPEATS=${REPEATS:-3}
REQUESTS=${ACL_REQUESTS:-500000}
CLIENTS=${ACL_CLIENTS:-50}
WORK=$(mktemp -d /tmp/shoal-bench-acl.XXXXXX)

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
bench_binaries

PID=""
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# measure WHO USER PORT TEST AUTH...: one redis-benchmark run of TEST; appends "rps srv_us/r" to
# $WORK/WHO-USER-TEST.runs
measure() {
  local who=$1 user=$2 port=$3 test=$4 c0 c1 csv
  shift 4
  c0=$(cpu_ns "$PID")
  csv=$(timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" "$@" -t "$test" -P 16 -r 1000000 \
    -n "$REQUESTS" -d 32 -c "$CLIENTS" --csv 2>/dev/null) || { log "$who $user $test: redis-benchmark failed"; return 1; }
  c1=$(cpu_ns "$PID")
  awk -F'"?,"?' -v c0="$c0" -v c1="$c1" -v n="$REQUESTS" -v t="${test^^}" '
    { gsub(/^"|"$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == t { printf "%s %.3f\n", $col["rps"], (c1 - c0) / 1000 / n }' <<<"$csv" >>"$WORK/$who-$user-$test.runs"
  log "$who $user $test: $(tail -n 1 "$WORK/$who-$user-$test.runs") (rps srv_us/r)"
}

# run_once WHO BIN: a fresh server, both users, SET then GET each
run_once() {
  local who=$1 bin=$2 port test
  port=$(free_port) || die "no free port"
  start_bench_server "$who" "$bin" "$port" "$WORK/$who-$port" || return 1
  [[ $(cli "$port" acl setuser bench on '>pw' '~key:*' '+@all') == OK ]] || die "$who: ACL SETUSER failed"
  # Fill the key range first, so that every measured run meets the same keyspace.
  timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -t set -P 16 -r 1000000 -n "$REQUESTS" -d 32 \
    -c "$CLIENTS" -q >/dev/null 2>&1 || true
  for test in set get; do
    if ((order % 2)); then # the users take turns at going first
      measure "$who" restricted "$port" "$test" --user bench -a pw || true
      measure "$who" default "$port" "$test" || true
    else
      measure "$who" default "$port" "$test" || true
      measure "$who" restricted "$port" "$test" --user bench -a pw || true
    fi
  done
  stop_server
}
order=0

for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    log "run $r/$REPEATS $who ($bin)"
    run_once "$who" "$bin" || log "WARNING: $who run $r failed"
  done
  order=$((order + 1))
done

figure() { [[ -s $WORK/$1.runs ]] && awk -v c="$2" '{print $c}' "$WORK/$1.runs" | median; }
lowest() { [[ -s $WORK/$1.runs ]] && awk -v c="$2" '{print $c}' "$WORK/$1.runs" | sort -g | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b != "") printf "%.3f", b / a; else print "n/a" }'; }
echo "| test | server | rps default | rps ~key:* user | srv µs/r default | srv µs/r ~key:* user | CPU/r restricted/default (median) | (lowest) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for test in set get; do
  for who in redis shoal; do
    rd=$(figure "$who-default-$test" 1) rr=$(figure "$who-restricted-$test" 1)
    cd=$(figure "$who-default-$test" 2) cr=$(figure "$who-restricted-$test" 2)
    ld=$(lowest "$who-default-$test" 2) lr=$(lowest "$who-restricted-$test" 2)
    echo "| ${test^^} P16 c=$CLIENTS | $who | ${rd:--} | ${rr:--} | ${cd:--} | ${cr:--} | $(ratio "$cd" "$cr") | $(ratio "$ld" "$lr") |"
  done
done
echo
echo "Medians of REPEATS=$REPEATS runs, redis and shoal interleaved, each on a fresh server with both users"
echo "(the key range filled first; the users take turns at going first). srv µs/r = server on-CPU µs per"
echo "request (schedstat, all threads); (lowest) compares each user's least CPU per request, the figure"
echo "other load on a shared machine disturbs least."
