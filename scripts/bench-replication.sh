#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# Replication benchmark, shoal-server against redis-server in the same run (interleaved):
#   1. SET -P16 throughput of a master that has one connected replica (redis-benchmark),
#      median of REPEATS runs each; the replica must have caught up after every run (same
#      DEBUG DIGEST); and without a replica, to tell replication's cost from the server's;
#   2. full sync time of SYNC_KEYS keys: an empty replica is pointed at a populated master
#      (REPLICAOF) and timed until its link is up, the sync is over and DBSIZE matches
#      (redis: fork + RDB, diskless, repl-diskless-sync-delay 0; shoal: fork-less slot images).
# Prints a table of shoal/redis ratios and writes it to bench-results/replication.md.
#
#   scripts/bench-replication.sh
#   REPEATS=1 REQUESTS=200000 SYNC_KEYS=100000 scripts/bench-replication.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REQUESTS (2000000), KEYSPACE (1000000), CLIENTS (50), REPEATS (3),
# SYNC_KEYS (1000000), VALUE_SIZE (32).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-repl %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli redis-benchmark timeout; do command -v "$t" >/dev/null || die "$t not found"; done
REDIS=$(command -v "${REDIS_BASELINE:-redis-server}") || die "redis-server not found"
if [[ -n ${SHOAL_SERVER:-} ]]; then
  SHOAL=$SHOAL_SERVER
else
  SHOAL=$ROOT/bin/shoal-server
  if [[ ! -x $SHOAL ]]; then
    log "building $SHOAL"
    (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server) || die "build failed"
  fi
fi
REQUESTS=${REQUESTS:-2000000}
KEYSPACE=${KEYSPACE:-1000000}
CLIENTS=${CLIENTS:-50}
REPEATS=${REPEATS:-3}
SYNC_KEYS=${SYNC_KEYS:-1000000}
VALUE_SIZE=${VALUE_SIZE:-32}
WORK=$(mktemp -d /tmp/shoal-bench-repl.XXXXXX)

PIDS=()
cleanup() {
  local p i
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$p" 2>/dev/null || true
  done
  PIDS=()
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

# start BIN PORT [args...]: a server in the foreground (its pid in PIDS), waits for PING.
start() {
  local bin=$1 port=$2 i
  shift 2
  local dir=$WORK/$port
  mkdir -p "$dir"
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no \
    --enable-debug-command local --repl-diskless-sync-delay 0 "$@" >"$dir/log" 2>&1 &
  PIDS+=($!)
  for ((i = 0; i < 200; i++)); do [[ $(cli "$port" ping 2>/dev/null) == PONG ]] && return 0; sleep 0.05; done
  die "$bin on port $port did not start: $(tail -5 "$dir/log")"
}

# wait_synced MASTER REPLICA [KEYS]: link up, no sync in progress, offsets equal (and DBSIZE).
wait_synced() {
  local m=$1 r=$2 keys=${3:-} i
  for ((i = 0; i < 12000; i++)); do
    if [[ $(info_field "$r" replication master_link_status) == up &&
      $(info_field "$r" replication master_sync_in_progress) == 0 ]]; then
      if [[ -n $keys ]]; then
        [[ $(cli "$r" dbsize) == "$keys" ]] && return 0
      elif [[ $(info_field "$m" replication master_repl_offset) == $(info_field "$r" replication slave_repl_offset) ]]; then
        return 0
      fi
    fi
    sleep 0.01
  done
  die "replica $r did not catch up with $m"
}

now_ms() { date +%s%3N; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }

# throughput BIN [alone] -> SET -P16 rps of a master with one replica (or none: alone), one run
throughput() {
  local bin=$1 alone=${2:-} mp rp rps
  mp=$(free_port) && start "$bin" "$mp"
  if [[ -z $alone ]]; then
    rp=$(free_port) && start "$bin" "$rp" --replicaof 127.0.0.1 "$mp"
    wait_synced "$mp" "$rp"
  fi
  rps=$(redis-benchmark -h 127.0.0.1 -p "$mp" -t set -P 16 -c "$CLIENTS" -n "$REQUESTS" -r "$KEYSPACE" \
    -d "$VALUE_SIZE" -q 2>/dev/null | tr '\r' '\n' | awk '/^SET:/ { print $2 }' | tail -1)
  if [[ -z $alone ]]; then
    wait_synced "$mp" "$rp"
    [[ $(cli "$mp" debug digest) == $(cli "$rp" debug digest) ]] || die "$bin: replica digest differs after the run"
  fi
  cleanup
  echo "${rps:-0}"
}

# fullsync BIN -> milliseconds for an empty replica to sync SYNC_KEYS keys
fullsync() {
  local bin=$1 mp rp t0 t1
  mp=$(free_port) && start "$bin" "$mp"
  [[ $(cli "$mp" debug populate "$SYNC_KEYS" key "$VALUE_SIZE") == OK ]] || die "DEBUG POPULATE failed on $bin"
  rp=$(free_port) && start "$bin" "$rp"
  t0=$(now_ms)
  cli "$rp" replicaof 127.0.0.1 "$mp" >/dev/null
  wait_synced "$mp" "$rp" "$SYNC_KEYS"
  t1=$(now_ms)
  cleanup
  echo $((t1 - t0))
}

declare -A RPS ALONE SYNC
for who in redis shoal; do RPS[$who]="" ALONE[$who]="" SYNC[$who]=""; done
for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    v=$(throughput "$bin")
    log "run $r: $who SET -P16 with a replica: $v rps"
    RPS[$who]+="$v "
    v=$(throughput "$bin" alone)
    log "run $r: $who SET -P16 without replicas: $v rps"
    ALONE[$who]+="$v "
  done
done
for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    v=$(fullsync "$bin")
    log "run $r: $who full sync of $SYNC_KEYS keys: $v ms"
    SYNC[$who]+="$v "
  done
done

rps_r=$(tr ' ' '\n' <<<"${RPS[redis]}" | grep . | median)
rps_s=$(tr ' ' '\n' <<<"${RPS[shoal]}" | grep . | median)
alone_r=$(tr ' ' '\n' <<<"${ALONE[redis]}" | grep . | median)
alone_s=$(tr ' ' '\n' <<<"${ALONE[shoal]}" | grep . | median)
sync_r=$(tr ' ' '\n' <<<"${SYNC[redis]}" | grep . | median)
sync_s=$(tr ' ' '\n' <<<"${SYNC[shoal]}" | grep . | median)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

mkdir -p "$ROOT/bench-results"
{
  echo "# Replication benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, median of $REPEATS)"
  echo
  echo "| measure | redis-server | shoal | shoal/redis |"
  echo "|---|---|---|---|"
  echo "| SET -P16 -c $CLIENTS, master with 1 replica (rps) | $rps_r | $rps_s | $(ratio "$rps_s" "$rps_r") |"
  echo "| SET -P16 -c $CLIENTS, no replica (rps) | $alone_r | $alone_s | $(ratio "$alone_s" "$alone_r") |"
  echo "| with a replica / without | $(ratio "$rps_r" "$alone_r") | $(ratio "$rps_s" "$alone_s") | |"
  echo "| full sync of $SYNC_KEYS keys (ms) | $sync_r | $sync_s | $(ratio "$sync_s" "$sync_r") |"
  echo
  echo "runs: redis rps ${RPS[redis]}/ shoal rps ${RPS[shoal]}/ redis sync ms ${SYNC[redis]}/ shoal sync ms ${SYNC[shoal]}"
} | tee "$ROOT/bench-results/replication.md"
