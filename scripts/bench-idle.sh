#!/usr/bin/env bash
# Idle cost of a 3 masters + 3 replicas cluster, shoal next to redis-server in the same run: each
# server's cluster is created with the shared anchor helpers (../shared/bench/lib.sh, redis-cli
# --cluster create, cluster-node-timeout 1000 unless CLUSTER_NODE_TIMEOUT says otherwise), left
# to settle for SETTLE_S seconds, then the CPU of the six processes is read over IDLE_S seconds,
# both from the scheduler (schedstat, ns) and as utime+stime (/proc/<pid>/stat, clock ticks),
# and their memory at the end of that window: anonymous memory (smaps_rollup), summed.
# The servers of each run are stopped (by PID) before the next one starts.
#
#   scripts/bench-idle.sh
#   SERVERS="redis-server /tmp/old-shoal bin/shoal-server" REPEATS=3 scripts/bench-idle.sh
#
# Environment: SERVERS (default "redis-server <repo>/bin/shoal-server"), REPEATS (3, the servers
# interleaved), SETTLE_S (5), IDLE_S (10), CLUSTER_BASE_PORT (a free block is searched from 23100),
# BENCH_DIR (default <repo>/../shared/bench). Prints one row per run and the median per server:
#   server run ms_cpu(schedstat, all six) ms_utime+stime(all six) ms_per_node_per_s anon_kb(all six)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-$ROOT/../shared/bench}
SERVERS=${SERVERS:-"redis-server $ROOT/bin/shoal-server"}
REPEATS=${REPEATS:-3}
SETTLE_S=${SETTLE_S:-5}
IDLE_S=${IDLE_S:-10}
export DAEMONIZE=no
BASE_FROM=${CLUSTER_BASE_PORT:-23100}
# shellcheck source=/dev/null
source "$BENCH_DIR/lib.sh"

free_block() { # first base port whose 6 client ports and 6 bus ports are all free
  local base p ok
  for ((base = BASE_FROM; base < 30000; base += 10)); do
    ok=1
    for ((p = base; p < base + CLUSTER_NODES; p++)); do
      if port_in_use "$p" || port_in_use $((p + 10000)); then ok=0; break; fi
    done
    ((ok)) && { echo "$base"; return 0; }
  done
  return 1
}

anon_kb() { # anonymous memory of one pid, in KB
  awk '/^Anonymous:/ { print $2 }' "/proc/$1/smaps_rollup"
}

ticks_of() { # utime+stime of one pid, in clock ticks
  sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

bench_init
declare -A ROWS=()
for ((r = 1; r <= REPEATS; r++)); do
  for srv in $SERVERS; do
    REDIS_SERVER=$(command -v "$srv")
    CLUSTER_BASE_PORT=$(free_block) || die "no free port block"
    cluster_up 2>"$RUN_ROOT/cluster-up.log" || { cat "$RUN_ROOT/cluster-up.log" >&2; die "cluster with $srv did not come up"; }
    sleep "$SETTLE_S"
    pids=$(cluster_pids_csv | tr , ' ')
    ns0=0 t0=0
    for p in $pids; do ns0=$((ns0 + $(cpu_ns "$p"))); t0=$((t0 + $(ticks_of "$p"))); done
    sleep "$IDLE_S"
    ns1=0 t1=0 kb=0
    for p in $pids; do ns1=$((ns1 + $(cpu_ns "$p"))); t1=$((t1 + $(ticks_of "$p"))); kb=$((kb + $(anon_kb "$p"))); done
    row=$(awk -v ns=$((ns1 - ns0)) -v t=$((t1 - t0)) -v hz="$CLK_TCK" -v s="$IDLE_S" -v n="$CLUSTER_NODES" -v kb="$kb" \
      'BEGIN { printf "%.1f %.0f %.2f %d", ns / 1e6, t * 1000 / hz, ns / 1e6 / s / n, kb }')
    printf '%s run=%d cpu_ms=%s\n' "$srv" "$r" "$row"
    ROWS[$srv]+="$row"$'\n'
    stop_all
    rm -rf "$RUN_ROOT"/node-*  # a fresh nodes.conf for the next cluster on the same ports
  done
done

echo
echo "# median over $REPEATS runs of the six processes idle for ${IDLE_S}s after ${SETTLE_S}s settle"
echo "# server  schedstat_ms  utime+stime_ms  ms_per_node_per_s  anon_kb(six)"
for srv in $SERVERS; do
  printf '%s %s %s %s %s\n' "$srv" \
    "$(printf '%s' "${ROWS[$srv]}" | awk 'NF { print $1 }' | median)" \
    "$(printf '%s' "${ROWS[$srv]}" | awk 'NF { print $2 }' | median)" \
    "$(printf '%s' "${ROWS[$srv]}" | awk 'NF { print $3 }' | median)" \
    "$(printf '%s' "${ROWS[$srv]}" | awk 'NF { print $4 }' | median)"
done
