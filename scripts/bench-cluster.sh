#!/usr/bin/env bash
# Side-by-side cluster benchmark: a 3 masters + 3 replicas cluster of real redis-server, then one of
# shoal-server, each measured by the shared anchor script bench/redis-cluster.sh (redis-cli --cluster
# create, `redis-benchmark --cluster -t set,get -c 50 -d 32`, median of REPEATS runs), and a table of
# shoal/redis ratios: rps (higher is better for shoal above 1.0) and server CPU µs per request
# (srv_us/r: CPU of all 6 server processes per request; below 1.0 is better for shoal).
#
#   scripts/bench-cluster.sh
#   REPEATS=1 PLAN="1:200000:none 16:1000000:none" scripts/bench-cluster.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), BENCH_DIR (the shared anchor scripts, default <repo>/../shared/bench),
# PLAN (default "1:1000000:none 16:5000000:none": -P 1 with 1M requests, -P 16 with 5M), REPEATS (3).
# The table is also written to bench-results/cluster.md. Everything binds 127.0.0.1; the anchor
# script stops the servers it started, by PID.
#
# Reading the rps: with --cluster, redis-benchmark runs one thread per master, and its main loop
# notices that they are done only on its 250 ms progress timer, so a run's duration is a whole
# number of quarter seconds (requests / rps = 7.00 s, 7.50 s, 8.25 s...). At -P 1 with 1M requests
# (7-8 s) one quarter second is 3% of the rps, which a ratio can gain or lose on one run; a PLAN
# with more requests (e.g. "1:3000000:none") shrinks the step. The CPU column has no such step.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

BENCH_DIR=${BENCH_DIR:-$ROOT/../shared/bench}
[[ -x $BENCH_DIR/redis-cluster.sh ]] || die "no $BENCH_DIR/redis-cluster.sh (set BENCH_DIR)"
for t in redis-cli redis-benchmark; do command -v "$t" >/dev/null || die "$t not found"; done
REDIS=$(command -v "${REDIS_BASELINE:-redis-server}") || die "redis-server not found"
if [[ -n ${SHOAL_SERVER:-} ]]; then
  SHOAL=$SHOAL_SERVER
else
  SHOAL=$ROOT/bin/shoal-server
  [[ -x $SHOAL ]] || (cd "$ROOT" && make build >/dev/null) || die "cannot build shoal-server"
fi
export PLAN=${PLAN:-"1:1000000:none 16:5000000:none"}
export REPEATS=${REPEATS:-3}

work=$(mktemp -d /tmp/shoal-bench-cluster.XXXXXX)
run_one() { # name binary
  log "$1: $2 (PLAN=$PLAN REPEATS=$REPEATS)"
  RESULTS_DIR=$work/$1 REDIS_SERVER=$2 "$BENCH_DIR/redis-cluster.sh" | tee "$work/$1.txt" >&2
}
run_one redis "$REDIS"
run_one shoal "$SHOAL"

# The anchor's summary rows: mode P requests keyspace test rps_med rps_range p50 p99 cli_us/r srv_us/r other% runs
rows() { awk '$1 ~ /^cluster/ && NF >= 13 { print $2, $3, $4, $5, $6, $11, $12 }' "$work/$1.txt"; }
mkdir -p "$ROOT/bench-results"
{
  echo "# shoal vs redis, 3+3 cluster, redis-benchmark --cluster -c 50 -d 32 (median of $REPEATS)"
  echo
  echo "| P | requests | keyspace | test | redis rps | shoal rps | rps ratio | redis srv µs/r | shoal srv µs/r | CPU ratio (shoal/redis) | other% redis/shoal |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  join -j1 <(rows redis | awk '{ print $1"/"$2"/"$3"/"$4, $5, $6, $7 }' | sort) \
           <(rows shoal | awk '{ print $1"/"$2"/"$3"/"$4, $5, $6, $7 }' | sort) |
    awk '{ split($1, k, "/");
           printf "| %s | %s | %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %s/%s |\n",
             k[1], k[2], k[3], k[4], $2, $5, ($2 > 0 ? $5 / $2 : 0), $3, $6, ($3 > 0 ? $6 / $3 : 0), $4, $7 }' |
    sort -t'|' -k2,2n -k3,3n
  echo
  echo "rps ratio > 1: shoal serves more requests per second; CPU ratio < 1: shoal burns less server CPU per request."
  echo "Raw output: $work"
} | tee "$ROOT/bench-results/cluster.md"
