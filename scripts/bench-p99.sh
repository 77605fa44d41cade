#!/usr/bin/env bash
# Latency at -P 1: `redis-benchmark -t set,get -P 1 -c 50 -n N -d 32 --csv` against one server,
# standalone and cluster-enabled (a single node owning all 16384 slots), for each binary of
# SERVERS interleaved, REPEATS times: rps, p50, p99 and the server's CPU µs per request
# (schedstat of all its threads), then the medians and the ratios to the first server.
#
#   scripts/bench-p99.sh
#   SERVERS="redis-server /tmp/old-shoal bin/shoal-server" REPEATS=3 N=500000 scripts/bench-p99.sh
#
# Environment: SERVERS (default "redis-server <repo>/bin/shoal-server"; the first is the baseline),
# MODES ("standalone cluster"), REPEATS (3), N (500000), CLIENTS (50), PIPELINE (1),
# PORT (a free port is searched from 24100), BENCH_DIR (default <repo>/../shared/bench).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-$ROOT/../shared/bench}
SERVERS=${SERVERS:-"redis-server $ROOT/bin/shoal-server"}
MODES=${MODES:-"standalone cluster"}
REPEATS=${REPEATS:-3}
N=${N:-500000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-1}
PORT_FROM=${PORT:-24100}
export DAEMONIZE=no
# shellcheck source=/dev/null
source "$BENCH_DIR/lib.sh"

free_port() {
  local p
  for ((p = PORT_FROM; p < 30000; p++)); do
    port_in_use "$p" || port_in_use $((p + 10000)) || { echo "$p"; return 0; }
  done
  return 1
}

bench_init
out=$RUN_ROOT/rows
: >"$out"
for ((r = 1; r <= REPEATS; r++)); do
  for mode in $MODES; do
    for srv in $SERVERS; do
      REDIS_SERVER=$(command -v "$srv")
      port=$(free_port) || die "no free port"
      if [[ $mode == cluster ]]; then
        start_cluster_node "$port" 1000 2>/dev/null
        cli "$port" cluster addslotsrange 0 16383 >/dev/null
        for ((i = 0; i < 200; i++)); do
          [[ $(cli "$port" cluster info | tr -d '\r' | awk -F: '/^cluster_state/{print $2}') == ok ]] && break
          sleep 0.05
        done
      else
        start_node "$port" 2>/dev/null
      fi
      pid=${NODE_PID[$port]}
      c0=$(cpu_ns "$pid")
      csv=$("$REDIS_BENCHMARK" -h "$HOST" -p "$port" -t set,get -P "$PIPELINE" -c "$CLIENTS" -n "$N" -d 32 --csv)
      c1=$(cpu_ns "$pid")
      # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
      tr -d '"' <<<"$csv" | awk -F, -v srv="$srv" -v mode="$mode" -v r="$r" -v cpu=$((c1 - c0)) -v n="$N" \
        '$1 == "SET" || $1 == "GET" { printf "%s %s %s %s %.0f %s %s %.3f\n", srv, mode, $1, r, $2, $5, $7, cpu / 1e3 / (2 * n) }' |
        tee -a "$out"
      stop_all
      rm -rf "$RUN_ROOT"/node-*
    done
  done
done

echo
echo "# medians of $REPEATS (-P $PIPELINE -c $CLIENTS -n $N); srv_us/r is the server CPU per request over SET and GET together"
echo "# server mode test rps p50_ms p99_ms srv_us/r | rps/base p99/base cpu/base"
base=${SERVERS%% *}
awk '{ k = $1 " " $2 " " $3; rps[k] = rps[k] " " $5; p50[k] = p50[k] " " $6; p99[k] = p99[k] " " $7; cpu[k] = cpu[k] " " $8; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
  function med(s,   a, m, i, j, t) { m = split(s, a, " "); for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  END { for (i = 1; i <= n; i++) { k = order[i]; split(k, f, " "); b = base " " f[2] " " f[3]
      printf "%s %.0f %.3f %.3f %.3f | %.2f %.2f %.2f\n", k, med(rps[k]), med(p50[k]), med(p99[k]), med(cpu[k]),
        med(rps[k]) / med(rps[b]), med(p99[k]) / med(p99[b]), med(cpu[k]) / med(cpu[b]) } }' base="$base" "$out"
