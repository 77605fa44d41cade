#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# GET -P 16 with CLIENT TRACKING on (client-side caching's server half), shoal-server vs
# redis-server in the same run (interleaved, REPEATS times each; issue 19's benchmark).
# scripts/benchtrack opens TRACK_CLIENTS RESP3 connections with tracking on that GET random keys
# of a 10,000-key space in pipelines of 16, and TRACK_WRITERS connections that SET random keys
# meanwhile (each SET of a key a reader read sends that reader an invalidation push). The table
# gives the medians of rps, the server's CPU per GET (on-CPU time of all its threads, as in
# scripts/bench.sh) and the pushes the readers read. The writers SET once per TRACK_WRITE_EVERY
# GETs done (default 500), so both servers do the same writes for the same reads: unpaced, how many
# SETs a writer gets in beside 50×16 GETs was each server's scheduling (Redis serves it once per
# event-loop turn; in one measured pair with 300k GETs Redis ran 417 SETs and sent 4,882 pushes,
# shoal 2,301 and 27,904), and shoal's figure per GET carried 5× the writes. TRACK_WRITE_EVERY=0
# measures unpaced.
#
#   scripts/bench-tracking.sh
#   REPEATS=1 TRACK_REQUESTS=200000 scripts/bench-tracking.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REPEATS (3), TRACK_REQUESTS (1000000), TRACK_CLIENTS (50),
# TRACK_WRITERS (1), TRACK_WRITE_EVERY (500). Only the processes it starts are signalled, by PID, on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-tracking %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli timeout go; do command -v "$t" >/dev/null || die "$t not found"; done
REPEATS=${REPEATS:-3}
REQUESTS=${TRACK_REQUESTS:-1000000}
CLIENTS=${TRACK_CLIENTS:-50}
WRITERS=${TRACK_WRITERS:-1}
WRITE_EVERY=${TRACK_WRITE_EVERY:-500}
WORK=$(mktemp -d /tmp/shoal-bench-tracking.XXXXXX)

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
bench_binaries
(cd "$ROOT" && go build -o "$WORK/benchtrack" ./scripts/benchtrack) || die "building benchtrack failed"

PID=""
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# run_once WHO BIN: one measured run; appends "rps srv_us/r pushes sets" to $WORK/WHO.runs
run_once() {
  local who=$1 bin=$2 port c0 c1 out
  port=$(free_port) || die "no free port"
  start_bench_server "$who" "$bin" "$port" "$WORK/$who-$port" || return 1
  c0=$(cpu_ns "$PID")
  out=$(timeout 600 "$WORK/benchtrack" -addr "127.0.0.1:$port" -clients "$CLIENTS" -writers "$WRITERS" \
    -write-every "$WRITE_EVERY" -requests "$REQUESTS") || { log "$who: benchtrack failed"; stop_server; return 1; }
  c1=$(cpu_ns "$PID")
  stop_server
  read -r rps pushes sets <<<"$out"
  # the fill (10,000 SETs) and the writers' SETs are in the CPU figure too: a small, equal share
  # (the same count for both servers unless TRACK_WRITE_EVERY=0)
  awk -v rps="$rps" -v c0="$c0" -v c1="$c1" -v n="$REQUESTS" -v p="$pushes" -v s="$sets" \
    'BEGIN { printf "%s %.3f %s %s\n", rps, (c1 - c0) / 1000 / n, p, s }' >>"$WORK/$who.runs"
  log "$who: $(tail -n 1 "$WORK/$who.runs") (rps srv_us/r pushes sets)"
}

for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    log "run $r/$REPEATS $who ($bin)"
    run_once "$who" "$bin" || log "WARNING: $who run $r failed"
  done
done

ratio_table "GET P16 c=$CLIENTS n=$REQUESTS, CLIENT TRACKING on, $WRITERS writer(s), 1 SET per $WRITE_EVERY GETs" \
  "rps 1 higher" "srv_us/r 2 lower" "pushes 3 -" "sets 4 -"
echo
echo "Medians of REPEATS=$REPEATS runs, redis and shoal interleaved, each on a fresh server. srv_us/r ="
echo "server on-CPU µs per GET (schedstat, all threads)."
