#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# SET -P 16 with keyspace notifications on and one subscriber, shoal-server vs redis-server in the
# same run (interleaved, REPEATS times each; issue 19's benchmark). Each server starts with
# --notify-keyspace-events KEA; one PSUBSCRIBE '__key*__:*' subscriber reads every event (two per
# SET: __keyspace@0__:<key> and __keyevent@0__:set) while
#   redis-benchmark -t set -P 16 -r 1000000 -n $NOTIFY_REQUESTS -d 32 -c $NOTIFY_CLIENTS --csv
# runs. The table gives the medians of rps, p99 and the server's CPU per request (on-CPU time of all
# its threads, as in scripts/bench.sh), whether the subscriber was still connected at the end
# (a subscriber that falls behind by client-output-buffer-limit pubsub is disconnected), and with
# the drain subscriber the bytes it read per SET (equal for both servers when every event arrived).
#
# The subscriber (NOTIFY_SUBSCRIBER): "drain" (default) sends PSUBSCRIBE over bash's /dev/tcp and
# counts the bytes it reads (wc -c); "redis-cli" is `redis-cli psubscribe` printing every message.
# redis-cli's printing takes most of a core on a 2-core host and drains ~30 MB/s: a server that
# publishes faster fills the subscriber's 32 MB pubsub limit and drops it (as Redis would), and
# the run then measures a server without a subscriber.
#
#   scripts/bench-notify.sh
#   REPEATS=1 NOTIFY_REQUESTS=200000 scripts/bench-notify.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REPEATS (3), NOTIFY_REQUESTS (1000000), NOTIFY_CLIENTS (50), NOTIFY_FLAGS
# (KEA; "" measures the same run without notifications, the baseline), NOTIFY_SUBSCRIBER (drain).
# Only the
# processes it starts are signalled, by PID, on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-notify %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli redis-benchmark timeout; do command -v "$t" >/dev/null || die "$t not found"; done
REPEATS=${REPEATS:-3}
REQUESTS=${NOTIFY_REQUESTS:-1000000}
CLIENTS=${NOTIFY_CLIENTS:-50}
FLAGS=${NOTIFY_FLAGS-KEA}
SUBSCRIBER=${NOTIFY_SUBSCRIBER:-drain}
[[ $SUBSCRIBER == drain || $SUBSCRIBER == redis-cli ]] || die "NOTIFY_SUBSCRIBER is drain or redis-cli"
WORK=$(mktemp -d /tmp/shoal-bench-notify.XXXXXX)

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
bench_binaries

SRV="" SUB=""
stop() { # PID: TERM, wait up to 10 s, KILL
  local i
  [[ -n $1 ]] || return 0
  kill -TERM "$1" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() { stop "$SUB"; stop "$SRV"; SUB="" SRV=""; }
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# drain_subscriber PORT OUT: PSUBSCRIBE '__key*__:*', then count what arrives until EOF into OUT.
drain_subscriber() {
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf '*2\r\n$10\r\npsubscribe\r\n$10\r\n__key*__:*\r\n' >&3
  wc -c <&3 >"$2"
}

# run_once WHO BIN: one measured run; appends "rps p99 srv_us/r subscriber_alive sub_B/r" to
# $WORK/WHO.runs
run_once() {
  local who=$1 bin=$2 port i c0 c1 csv alive subbytes=0
  port=$(free_port) || die "no free port"
  start_bench_server "$who" "$bin" "$port" "$WORK/$who-$port" --notify-keyspace-events "$FLAGS" || return 1
  SRV=$PID PID=""
  if [[ $SUBSCRIBER == drain ]]; then
    drain_subscriber "$port" "$WORK/sub-$port" 2>/dev/null &
  else
    redis-cli -h 127.0.0.1 -p "$port" psubscribe '__key*__:*' >/dev/null 2>&1 &
  fi
  SUB=$!
  for ((i = 0; i < 200; i++)); do
    [[ $(info_field "$port" stats pubsub_patterns) == 1 ]] && break
    sleep 0.05
  done
  c0=$(cpu_ns "$SRV")
  csv=$(timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -t set -P 16 -r 1000000 -n "$REQUESTS" \
    -d 32 -c "$CLIENTS" --csv 2>/dev/null) || { log "$who: redis-benchmark failed"; cleanup; return 1; }
  c1=$(cpu_ns "$SRV")
  alive=$(info_field "$port" stats pubsub_patterns)
  if [[ $SUBSCRIBER == drain ]]; then
    sleep 1                                  # what is queued for the subscriber arrives
    stop "$SRV" && SRV=""                    # EOF: wc prints its count
    wait "$SUB" 2>/dev/null || true
    SUB="" subbytes=$(cat "$WORK/sub-$port" 2>/dev/null || echo 0)
  fi
  cleanup
  awk -F'"?,"?' -v c0="$c0" -v c1="$c1" -v n="$REQUESTS" -v alive="${alive:-0}" -v sb="$subbytes" '
    { gsub(/^"|"$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == "SET" { printf "%s %s %.3f %s %.1f\n", $col["rps"], $col["p99_latency_ms"], (c1 - c0) / 1000 / n, alive, sb / n }' \
    <<<"$csv" >>"$WORK/$who.runs"
  log "$who: $(tail -n 1 "$WORK/$who.runs") (rps p99_ms srv_us/r subscriber_alive sub_B/r)"
}

for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    log "run $r/$REPEATS $who ($bin)"
    run_once "$who" "$bin" || log "WARNING: $who run $r failed"
  done
done

ratio_table "SET P16 c=$CLIENTS n=$REQUESTS d=32, notify-keyspace-events '$FLAGS', 1 psubscriber ($SUBSCRIBER)" \
  "rps 1 higher" "p99_ms 2 lower" "srv_us/r 3 lower" "subscriber_alive 4 1" "sub_B/r 5 equal"
echo
echo "Medians of REPEATS=$REPEATS runs, redis and shoal interleaved, each on a fresh server. srv_us/r ="
echo "server on-CPU µs per SET (schedstat, all threads); subscriber_alive = pubsub_patterns at the end;"
echo "sub_B/r = bytes the drain subscriber read per SET (0 with redis-cli)."
