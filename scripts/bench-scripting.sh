#!/usr/bin/env bash
# shellcheck disable=SC2317 # functions called only from traps look unreachable
# Transactions and scripting, shoal-server vs redis-server in one run (scripts/benchtx):
# EVALSHA of a 3-call script and MULTI/EXEC of 3 SETs, 50 go-redis clients, each server
# alone on 127.0.0.1, alternating servers REPEATS times.
# Reports the median over REPEATS of rps and of server CPU µs per request (on-CPU time of all
# the server's threads over the run / requests done), which suffers less from a loaded machine.
#
#   scripts/bench-scripting.sh                       # DURATION=5s REPEATS=3 CLIENTS=50
#   SHOAL_SERVER=/usr/bin/redis-server scripts/bench-scripting.sh   # checks the script itself
#
# Only the servers this script starts are signalled, by PID.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
DURATION=${DURATION:-5s}
REPEATS=${REPEATS:-3}
CLIENTS=${CLIENTS:-50}
log() { printf '[bench-scripting %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }
bench_binaries
WORK=$(mktemp -d /tmp/benchtx.XXXXXX)
(cd "$ROOT" && go build -o "$WORK/benchtx" ./scripts/benchtx)

PID=""
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT

for r in $(seq 1 "$REPEATS"); do
  for name in redis shoal; do
    bin=$REDIS; [[ $name == shoal ]] && bin=$SHOAL
    port=$(free_port) || die "no free port"
    start_bench_server "$name" "$bin" "$port" "$WORK/$name" || die "$name did not start"
    for mode in evalsha multi; do
      before=$(cpu_ns "$PID")
      out=$("$WORK/benchtx" -addr "127.0.0.1:$port" -mode "$mode" -clients "$CLIENTS" -duration "$DURATION")
      used=$(($(cpu_ns "$PID") - before))
      log "run $r $name: $out"
      rps=${out#* }; rps=${rps%% *}
      ops=${out#*(}; ops=${ops%% *}
      echo "$rps $(awk -v n="$used" -v o="$ops" 'BEGIN {printf "%.2f", n / 1000 / o}')" >>"$WORK/$name-$mode.runs"
    done
    stop_server
  done
done

{
  for mode in evalsha multi; do
    label="EVALSHA (3 redis.call)"; [[ $mode == multi ]] && label="MULTI + 3 SET + EXEC"
    echo "rps (median of $REPEATS)|$label, $CLIENTS clients|$(run_median "redis-$mode" 1)|$(run_median "shoal-$mode" 1)|higher"
    echo "server CPU µs/request|$label|$(run_median "redis-$mode" 2)|$(run_median "shoal-$mode" 2)|lower"
  done
} | rows_table
