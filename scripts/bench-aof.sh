#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# SET -P 16 with the append-only file on, appendfsync everysec and always, shoal-server vs
# redis-server in the same run (interleaved, REPEATS times each; issue 18's benchmark). Each run
# starts a fresh server with --appendonly yes --appendfsync <policy> --save "" and times
#   redis-benchmark -t set -P 16 -r 1000000 -n $AOF_REQUESTS -d 100 -c $AOF_CLIENTS --csv
# It reports the median rps, p99 and the server's CPU per request (on-CPU time of all its threads
# from /proc/<pid>/task/*/schedstat), the same with the AOF rewrite the load started (at 64 MB,
# auto-aof-rewrite-min-size) counted to its end, fork child included, and the AOF's size after the
# run (aof_current_size).
#
#   scripts/bench-aof.sh
#   REPEATS=1 AOF_REQUESTS=200000 scripts/bench-aof.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REPEATS (3), AOF_REQUESTS (500000), AOF_CLIENTS (50), AOF_POLICIES
# ("everysec always"), AOF_ROWS (also write "metric|case|redis|shoal|better" rows there). Only the
# servers it starts are signalled, by PID, on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-aof %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli redis-benchmark timeout; do command -v "$t" >/dev/null || die "$t not found"; done
REPEATS=${REPEATS:-3}
REQUESTS=${AOF_REQUESTS:-500000}
CLIENTS=${AOF_CLIENTS:-50}
POLICIES=${AOF_POLICIES:-everysec always}
KEYSPACE=1000000
VALUE_SIZE=100
WORK=$(mktemp -d /tmp/shoal-bench-aof.XXXXXX)

PID=""
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
bench_binaries

# start BIN PORT POLICY DIR: the server in the foreground, PID set; 1 when it does not answer PING.
start() {
  local bin=$1 port=$2 policy=$3 dir=$4 i
  mkdir -p "$dir"
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly yes --appendfsync "$policy" --dir "$dir" \
    --daemonize no --logfile "" >"$dir/log" 2>&1 &
  PID=$!
  for ((i = 0; i < 200; i++)); do
    [[ $(cli "$port" ping 2>/dev/null) == PONG ]] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  log "$bin on port $port did not answer PING: $(tail -n 3 "$dir/log")"
  stop_server
  return 1
}

# run_once WHO BIN POLICY: one measured run; appends "rps p99 srv_us/r aof_bytes srv+rw_us/r" to
# $WORK/WHO-POLICY.runs. srv+rw_us/r also counts the AOF rewrite the load started, to its end:
# redis-server's runs in a fork child (its CPU is the parent's reaped children's), shoal-server's
# on its own threads, which srv_us/r already counts while the benchmark runs.
run_once() {
  local who=$1 bin=$2 policy=$3 port c0 c1 c2 csv size i
  port=$(free_port) || die "no free port"
  start "$bin" "$port" "$policy" "$WORK/$who-$policy-$port" || return 1
  c0=$(( $(cpu_ns "$PID") + $(children_cpu_ns "$PID") ))
  csv=$(timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -t set -P 16 -r "$KEYSPACE" -n "$REQUESTS" \
    -d "$VALUE_SIZE" -c "$CLIENTS" --csv 2>/dev/null) || { log "$who: redis-benchmark failed"; stop_server; return 1; }
  c1=$(( $(cpu_ns "$PID") + $(children_cpu_ns "$PID") ))
  size=$(info_field "$port" persistence aof_current_size)
  # Wait (at most 60 s) for a rewrite the load started to end and its child to be reaped.
  for ((i = 0; i < 600; i++)); do
    [[ $(info_field "$port" persistence aof_rewrite_in_progress) == 1 ]] || break
    sleep 0.1
  done
  sleep 0.2 # serverCron reaps the child
  c2=$(( $(cpu_ns "$PID") + $(children_cpu_ns "$PID") ))
  stop_server
  awk -F'"?,"?' -v c0="$c0" -v c1="$c1" -v c2="$c2" -v n="$REQUESTS" -v size="${size:-0}" '
    { gsub(/^"|"$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == "SET" { printf "%s %s %.3f %s %.3f\n", $col["rps"], $col["p99_latency_ms"], (c1 - c0) / 1000 / n, size, (c2 - c0) / 1000 / n }' \
    <<<"$csv" >>"$WORK/$who-$policy.runs"
  log "$who $policy: $(tail -n 1 "$WORK/$who-$policy.runs") (rps p99_ms srv_us/r aof_bytes srv+rw_us/r)"
}

for ((r = 1; r <= REPEATS; r++)); do
  for policy in $POLICIES; do
    for who in redis shoal; do
      bin=$REDIS
      [[ $who == shoal ]] && bin=$SHOAL
      log "run $r/$REPEATS $who appendfsync $policy"
      run_once "$who" "$bin" "$policy" || log "WARNING: $who $policy run $r failed"
    done
  done
done

figure() { run_median "$@"; }
rows=$(
  for policy in $POLICIES; do
    case="SET P16 c=$CLIENTS n=$REQUESTS d=$VALUE_SIZE appendfsync $policy"
    for spec in "rps 1 higher" "p99_ms 2 lower" "srv_us/r 3 lower" "srv+rw_us/r 5 lower" "aof_bytes 4 ~1"; do
      read -r metric colno better <<<"$spec"
      echo "$metric|$case|$(figure "redis-$policy" "$colno")|$(figure "shoal-$policy" "$colno")|$better"
    done
  done
)
[[ -n ${AOF_ROWS:-} ]] && printf '%s\n' "$rows" >"$AOF_ROWS"

rows_table <<<"$rows"
echo
echo "Medians of REPEATS=$REPEATS runs, redis and shoal interleaved, each a fresh server with the AOF on."
echo "srv_us/r = server on-CPU µs per SET while the benchmark runs (schedstat, all threads); srv+rw_us/r adds"
echo "the rest of the AOF rewrite the load started, to its end, with redis-server's fork child (reaped"
echo "children's CPU, 10 ms ticks); aof_bytes = aof_current_size after the run."
