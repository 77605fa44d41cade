#!/usr/bin/env bash
# A master that restarts without its data, against shoal-server or redis-server (issue 18).
#
#   scripts/datalost-rounds.sh [rounds]      (default 10)
#
# A 3+3 cluster without persistence (scripts/cluster.sh: --save '' --appendonly no,
# cluster-node-timeout 5000) holds DATALOST_KEYS keys in the slot of "{datalost}" while a writer
# keeps adding keys there through redis-cli -c. Each round: wait until the slot's replica has
# caught up, count its keys, kill -9 the slot's master and restart it at once from the same
# directory (same nodes.conf, no data file), then watch the replica's key count for
# DATALOST_WATCH seconds and once more when the shard has a caught-up replica again. A round "lost data" when the replica's count fell below what it held
# before the kill. Redis 7.0.15 lets the empty master serve its slots and the replica resyncs
# to nothing; shoal makes the replica take over and the restarted node follow it
# (failover/datalost.go).
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server; /usr/bin/redis-server for Redis),
# DATALOST_BASE_PORT (25100; bus ports are +10000, in the kernel's ephemeral range: if one is
# taken by an outgoing connection the start fails, run again or pick another base),
# DATALOST_KEYS (10000),
# DATALOST_WATCH (10 s), REDIS_CLI (redis-cli). The cluster is stopped at the end (and on
# failure); only the processes this script (through scripts/cluster.sh) started are signalled.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${1:-10}
BASE=${DATALOST_BASE_PORT:-25100}
KEYS=${DATALOST_KEYS:-10000}
WATCH=${DATALOST_WATCH:-10}
REDIS_CLI=${REDIS_CLI:-redis-cli}
DIR=/tmp/shoal-datalost-$BASE
TAG='{datalost}'

log() { printf '[datalost %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ && $BASE =~ ^[0-9]+$ && $KEYS =~ ^[0-9]+$ && $WATCH =~ ^[0-9]+$ ]] ||
  die "rounds, DATALOST_BASE_PORT, DATALOST_KEYS and DATALOST_WATCH must be numbers"

export CLUSTER_BASE_PORT=$BASE CLUSTER_DIR=$DIR REDIS_CLI
if [[ -z ${SHOAL_SERVER:-} ]]; then
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server) || die "build failed"
  export SHOAL_SERVER=$ROOT/bin/shoal-server
fi
SERVER=$(command -v "$SHOAL_SERVER") || die "SHOAL_SERVER=$SHOAL_SERVER is not an executable"
PIDS=$DIR/pids

cli() { timeout 5 "$REDIS_CLI" -h 127.0.0.1 "$@" 2>/dev/null; }
proc_starttime() { sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }

WRITER=
cleanup() {
  [[ -n $WRITER ]] && kill "$WRITER" 2>/dev/null && wait "$WRITER" 2>/dev/null
  "$ROOT/scripts/cluster.sh" stop >/dev/null 2>&1 || true
}
[[ ! -s $PIDS ]] || die "$PIDS lists nodes of an earlier run (CLUSTER_BASE_PORT=$BASE CLUSTER_DIR=$DIR scripts/cluster.sh stop)"
rm -rf "$DIR" # this script's own directory: no data file of an earlier run may load
trap cleanup EXIT
trap 'exit 130' INT TERM

"$ROOT/scripts/cluster.sh" start >/dev/null
SLOT=$(cli -p "$BASE" CLUSTER KEYSLOT "$TAG")

# shard: "master-port replica-port" of the slot, as the node on port $1 sees it.
shard() {
  cli -p "$1" CLUSTER NODES | awk -v slot="$SLOT" '
    { id[NR] = $1; addr[NR] = $2; flags[NR] = $3; master[NR] = $4
      for (i = 9; i <= NF; i++) { split($i, r, "-"); if (r[2] == "") r[2] = r[1]
        if ($3 ~ /master/ && $3 !~ /fail/ && slot + 0 >= r[1] + 0 && slot + 0 <= r[2] + 0) owner = $1 } }
    END { for (n = 1; n <= NR; n++) { split(addr[n], a, "[:@]")
            if (id[n] == owner) mp = a[2]; else if (master[n] == owner) rp = a[2] }
          if (mp != "" && rp != "") print mp, rp }'
}
# count PORT: the keys the node holds in the slot (-1: no number, e.g. -LOADING during a sync).
count() {
  local n
  n=$(cli -p "$1" CLUSTER COUNTKEYSINSLOT "$SLOT") || true
  [[ $n =~ ^[0-9]+$ ]] && echo "$n" || echo -1
}
info_field() { cli -p "$1" INFO replication | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }

# caught_up M R: R's link is up and it has everything M had a moment ago.
caught_up() {
  local want
  want=$(info_field "$1" master_repl_offset)
  for ((t = 0; t < 300; t++)); do
    if [[ $(info_field "$2" master_link_status) == up &&
      $(info_field "$2" slave_repl_offset) -ge ${want:-0} ]]; then return 0; fi
    sleep 0.1
  done
  return 1
}

# restart_node PORT: kill -9 the node we started on PORT and start it again at once with the
# same arguments (scripts/cluster.sh's), recording the new PID for cluster.sh stop.
restart_node() {
  local port=$1 pid start p
  read -r pid start p < <(awk -v port="$port" '$3 == port' "$PIDS")
  [[ -n ${pid:-} && $(proc_starttime "$pid") == "$start" ]] || die "node $port is not one this script started"
  kill -KILL "$pid"
  while [[ -e /proc/$pid && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do sleep 0.01; done
  setsid "$SERVER" --port "$port" --bind 127.0.0.1 --dir "$DIR/$port" --daemonize no \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --save '' --appendonly no </dev/null >>"$DIR/$port/server.log" 2>&1 &
  local npid=$!
  disown "$npid"
  awk -v port="$port" '$3 != port' "$PIDS" >"$PIDS.new"
  echo "$npid $(proc_starttime "$npid") $port" >>"$PIDS.new"
  mv "$PIDS.new" "$PIDS"
}

read -r M R < <(shard "$BASE")
[[ -n ${M:-} ]] || die "no master/replica pair for slot $SLOT"
log "$(basename "$SERVER"): slot $SLOT served by $M (replica $R); loading $KEYS keys"
for ((i = 0; i < KEYS; i++)); do printf 'SET %s:p%d %d\r\n' "$TAG" "$i" "$i"; done |
  "$REDIS_CLI" -h 127.0.0.1 -p "$M" --pipe >/dev/null
# The writer: one redis-cli -c per SET (it follows MOVED), its acknowledged count in a file.
(
  n=0
  while :; do
    if [[ $("$REDIS_CLI" -c -h 127.0.0.1 -p "$BASE" SET "$TAG:w$n" "$n" 2>/dev/null) == OK ]]; then
      n=$((n + 1))
      echo "$n" >"$DIR/writer.tmp" && mv "$DIR/writer.tmp" "$DIR/writer.acked"
    else
      sleep 0.05
    fi
  done
) &
WRITER=$!

lost_rounds=0 lost_keys=0
for ((round = 1; round <= ROUNDS; round++)); do
  read -r M R < <(shard "$BASE")
  # A node outside the shard watches who serves the slot.
  OBS=$BASE
  for ((i = 0; i < 6; i++)); do p=$((BASE + i)); [[ $p != "$M" && $p != "$R" ]] && { OBS=$p; break; }; done
  caught_up "$M" "$R" || die "round $round: replica $R did not catch up with $M"
  held=$(count "$R")
  restart_node "$M"
  lowest=$held
  end=$((SECONDS + WATCH))
  while ((SECONDS < end)); do
    n=$(count "$R")
    ((n >= 0 && n < lowest)) && lowest=$n
    sleep 0.1
  done
  # Then until the shard has a caught-up replica again (a redis-server master waits
  # repl-diskless-sync-delay, 5 s, before it sends the full sync).
  M2= R2=
  for ((w = 0; w < 600; w++)); do
    read -r M2 R2 < <(shard "$OBS") || true
    [[ -n $M2 ]] && caught_up "$M2" "$R2" && break
    sleep 0.1
  done
  n=$(count "$R")
  ((n >= 0 && n < lowest)) && lowest=$n
  after=$(count "${M2:-$M}")
  role=$(cli -p "$M" ROLE | head -1)
  if ((lowest < held)); then
    lost_rounds=$((lost_rounds + 1)) lost_keys=$((lost_keys + held - lowest))
  fi
  printf 'round %2d: killed master %s; replica %s held %6d keys, lowest %6d; slot now on %s with %6d keys; restarted node is a %s\n' \
    "$round" "$M" "$R" "$held" "$lowest" "${M2:-?}" "$after" "$role"
done
kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null || true
WRITER=
sleep 1
check=ok
timeout 30 "$REDIS_CLI" --cluster check "127.0.0.1:$BASE" >"$DIR/check.log" 2>&1 || check="FAILED (see $DIR/check.log)"
printf '%s: %d rounds, %d lost data on the replica (%d keys in all); writer acknowledged %s SETs; cluster check %s\n' \
  "$(basename "$SERVER")" "$ROUNDS" "$lost_rounds" "$lost_keys" "$(cat "$DIR/writer.acked" 2>/dev/null || echo 0)" "$check"
