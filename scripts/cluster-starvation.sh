#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# A cluster of N nodes (N/2 masters, one replica each) on 127.0.0.1 with HOGS CPU-bound processes
# beside it, watched for DURATION seconds: a node that mistakes its own stalled process for silent
# peers marks them PFAIL and may start elections (issue 24). Every 5 s each node's CLUSTER INFO
# and CLUSTER NODES are read; the summary gives the samples where every node said
# cluster_state:ok, the most pfail/fail flags seen at once, and how much cluster_current_epoch
# rose (each failover bumps it).
#
#   scripts/cluster-starvation.sh                               # shoal-server, 20 nodes, 2 hogs, 600 s
#   SERVER=/usr/bin/redis-server scripts/cluster-starvation.sh  # the same against Redis
#
# Environment: SERVER (default <repo>/bin/shoal-server), NODES (20), HOGS (2), DURATION (600),
# BASE_PORT (7400; bus ports are 10000 above). Only the processes it starts are signalled.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER=${SERVER:-$ROOT/bin/shoal-server}
NODES=${NODES:-20}
HOGS=${HOGS:-2}
DURATION=${DURATION:-600}
BASE=${BASE_PORT:-7400}
WORK=$(mktemp -d /tmp/cluster-starvation.XXXXXX)
log() { printf '[starvation %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

PIDS=() HOG_PIDS=()
cleanup() {
  local p
  for p in "${HOG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

addrs=()
for ((i = 0; i < NODES; i++)); do
  port=$((BASE + i))
  if redis-cli -p "$port" ping >/dev/null 2>&1; then log "port $port is in use"; exit 2; fi
  mkdir -p "$WORK/$port"
  "$SERVER" --port "$port" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$WORK/$port/nodes.conf" \
    --cluster-node-timeout 5000 --save "" --appendonly no --dir "$WORK/$port" --logfile "$WORK/$port/log" &
  PIDS+=($!)
  addrs+=("127.0.0.1:$port")
done
for ((i = 0; i < NODES; i++)); do
  for ((t = 0; t < 100; t++)); do redis-cli -p $((BASE + i)) ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$WORK/create.log" 2>&1 ||
  { log "create failed: $(tail -3 "$WORK/create.log")"; exit 1; }
for ((t = 0; t < 300; t++)); do
  ok=1
  for ((i = 0; i < NODES; i++)); do
    redis-cli -p $((BASE + i)) cluster info 2>/dev/null | grep -q cluster_state:ok || ok=0
  done
  ((ok)) && break
  sleep 0.5
done
((ok)) || { log "the cluster never came up"; exit 1; }
epoch0=$(redis-cli -p "$BASE" cluster info | tr -d '\r' | awk -F: '$1 == "cluster_current_epoch" {print $2}')
log "$NODES nodes up ($("$SERVER" --version | head -1)); starting $HOGS CPU hogs for $DURATION s"
for ((h = 0; h < HOGS; h++)); do
  yes >/dev/null &
  HOG_PIDS+=($!)
done

samples=0 all_ok=0 worst_flags=0
end=$((SECONDS + DURATION))
while ((SECONDS < end)); do
  ok=1 flags=0
  for ((i = 0; i < NODES; i++)); do
    port=$((BASE + i))
    timeout 5 redis-cli -p "$port" cluster info 2>/dev/null | grep -q cluster_state:ok || ok=0
    n=$(timeout 5 redis-cli -p "$port" cluster nodes 2>/dev/null | awk '$3 ~ /fail/' | wc -l)
    flags=$((flags + n))
  done
  samples=$((samples + 1))
  ((ok)) && all_ok=$((all_ok + 1))
  ((flags > worst_flags)) && worst_flags=$flags
  ((ok && flags == 0)) || log "sample $samples: all ok=$ok, pfail/fail flags=$flags"
  sleep 5
done
epoch1=$(redis-cli -p "$BASE" cluster info | tr -d '\r' | awk -F: '$1 == "cluster_current_epoch" {print $2}')
echo "server: $("$SERVER" --version | head -1)"
echo "nodes=$NODES hogs=$HOGS duration=${DURATION}s samples=$samples all_nodes_ok=$all_ok most_pfail_fail_flags=$worst_flags epoch_rise=$((epoch1 - epoch0))"
