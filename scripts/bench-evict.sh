#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# SET -P 16 with allkeys-lru while evicting on every write, shoal-server vs redis-server in the same
# run (interleaved, REPEATS times each; issue 17's benchmark). Each server starts with
# --maxmemory $EVICT_MAXMEMORY --maxmemory-policy allkeys-lru, is filled past the limit with
#   redis-benchmark -t set -P 16 -r 10000000 -n $EVICT_PREFILL -d 100
# (it must have evicted by then: the keyspace is full), then timed:
#   redis-benchmark -t set -P 16 -r 10000000 -n $EVICT_REQUESTS -d 100 -c $EVICT_CLIENTS --csv
# Nearly every SET then writes a new key into a full keyspace and so evicts one: the script reports
# evicted_keys gained per SET beside the rps, p99 and the server's CPU per request (on-CPU time of
# all its threads from /proc/<pid>/task/*/schedstat, as srv_us/r in scripts/bench.sh's table).
# Medians over REPEATS. A server that refuses the configuration (exits at start-up) gets a
# "refused" row with its reason; the script still exits 0.
#
#   scripts/bench-evict.sh
#   REPEATS=1 EVICT_REQUESTS=200000 scripts/bench-evict.sh   # quick look
#   SHOAL_SERVER=/usr/bin/redis-server scripts/bench-evict.sh   # checks the script itself
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REPEATS (3), EVICT_REQUESTS (1000000), EVICT_PREFILL (200000),
# EVICT_MAXMEMORY (16mb), EVICT_CLIENTS (50), EVICT_ROWS (also write "metric|case|redis|shoal|better"
# rows there: scripts/bench.sh puts them in its table). Only the servers it starts are signalled,
# by PID, on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-evict %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli redis-benchmark timeout; do command -v "$t" >/dev/null || die "$t not found"; done
REPEATS=${REPEATS:-3}
REQUESTS=${EVICT_REQUESTS:-1000000}
PREFILL=${EVICT_PREFILL:-200000}
MAXMEMORY=${EVICT_MAXMEMORY:-16mb}
CLIENTS=${EVICT_CLIENTS:-50}
KEYSPACE=10000000
VALUE_SIZE=100
WORK=$(mktemp -d /tmp/shoal-bench-evict.XXXXXX)

PID=""
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
bench_binaries

# start WHO BIN PORT: the server in the foreground, PID set; returns 2 (reason in $WORK/WHO.refused)
# when it exits before answering PING, 1 when it neither answers nor exits.
start() {
  local who=$1 bin=$2 port=$3 i
  local dir=$WORK/$who-$port
  mkdir -p "$dir"
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no \
    --logfile "" --maxmemory "$MAXMEMORY" --maxmemory-policy allkeys-lru >"$dir/log" 2>&1 &
  PID=$!
  for ((i = 0; i < 200; i++)); do
    [[ $(cli "$port" ping 2>/dev/null) == PONG ]] && return 0
    if ! kill -0 "$PID" 2>/dev/null; then
      wait "$PID" 2>/dev/null || true
      PID=""
      grep -v '^[[:space:]]*$' "$dir/log" | tail -n 3 | awk '{ printf "%s%s", (NR > 1 ? " / " : ""), $0 } END { print "" }' >"$WORK/$who.refused"
      return 2
    fi
    sleep 0.05
  done
  log "$bin on port $port did not answer PING: $(tail -n 3 "$dir/log")"
  stop_server
  return 1
}

# run_once WHO BIN: one measured run; appends "rps p99 srv_us/r evict/set used_memory" to $WORK/WHO.runs
run_once() {
  local who=$1 bin=$2 port rc=0 ev0 ev1 c0 c1 csv
  port=$(free_port) || die "no free port"
  start "$who" "$bin" "$port" || rc=$?
  if ((rc == 2)); then log "$who refused the configuration: $(cat "$WORK/$who.refused")"; return 0; fi
  ((rc == 0)) || return 1
  timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -t set -P 16 -r "$KEYSPACE" -n "$PREFILL" -d "$VALUE_SIZE" \
    -c "$CLIENTS" -q >/dev/null 2>&1 || { log "$who: prefill failed"; stop_server; return 1; }
  ev0=$(info_field "$port" stats evicted_keys)
  if [[ -z $ev0 || $ev0 -eq 0 ]]; then
    log "WARNING: $who evicted nothing during the prefill of $PREFILL SETs (evicted_keys=${ev0:-missing}): raise EVICT_PREFILL"
  fi
  c0=$(cpu_ns "$PID")
  csv=$(timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -t set -P 16 -r "$KEYSPACE" -n "$REQUESTS" \
    -d "$VALUE_SIZE" -c "$CLIENTS" --csv 2>/dev/null) || { log "$who: redis-benchmark failed"; stop_server; return 1; }
  c1=$(cpu_ns "$PID")
  ev1=$(info_field "$port" stats evicted_keys)
  local used; used=$(info_field "$port" memory used_memory)
  stop_server
  # CSV: "test","rps",...,"p99_latency_ms",...; columns found by name
  awk -F'"?,"?' -v c0="$c0" -v c1="$c1" -v e0="${ev0:-0}" -v e1="${ev1:-0}" -v n="$REQUESTS" -v used="${used:-0}" '
    { gsub(/^"|"$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == "SET" { printf "%s %s %.3f %.3f %s\n", $col["rps"], $col["p99_latency_ms"], (c1 - c0) / 1000 / n, (e1 - e0) / n, used }' \
    <<<"$csv" >>"$WORK/$who.runs"
  log "$who: $(tail -n 1 "$WORK/$who.runs") (rps p99_ms srv_us/r evicted/SET used_memory)"
}

for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    [[ -f $WORK/$who.refused ]] && continue
    log "run $r/$REPEATS $who ($bin)"
    run_once "$who" "$bin" || log "WARNING: $who run $r failed"
  done
done

# figure WHO COLUMN -> the median of that column over the runs, "refused", or "" (no runs)
figure() {
  if [[ -f $WORK/$1.refused ]]; then echo refused; return; fi
  [[ -s $WORK/$1.runs ]] || return 0
  awk -v c="$2" '{print $c}' "$WORK/$1.runs" | median
}
case="SET P16 n=$REQUESTS r=$KEYSPACE d=$VALUE_SIZE allkeys-lru $MAXMEMORY"
rows=$(
  for spec in "rps 1 higher" "p99_ms 2 lower" "srv_us/r 3 lower" "evicted/SET 4 ~1" "used_memory 5 lower"; do
    read -r metric colno better <<<"$spec"
    echo "$metric|$case|$(figure redis "$colno")|$(figure shoal "$colno")|$better"
  done
)
[[ -n ${EVICT_ROWS:-} ]] && printf '%s\n' "$rows" >"$EVICT_ROWS"

rows_table <<<"$rows"
for who in redis shoal; do
  if [[ -f $WORK/$who.refused ]]; then
    echo
    echo "$who refused \`--maxmemory $MAXMEMORY --maxmemory-policy allkeys-lru\`: $(cat "$WORK/$who.refused")"
  fi
done
echo
echo "Medians of REPEATS=$REPEATS runs, redis and shoal interleaved; each run is a fresh server filled past"
echo "the limit with $PREFILL SETs first. srv_us/r = server on-CPU µs per SET (schedstat, all threads);"
echo "evicted/SET = INFO evicted_keys gained per SET of the timed run (~1: every write evicts)."
