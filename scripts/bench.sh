#!/usr/bin/env bash
# shellcheck disable=SC2317 # functions called only from traps look unreachable
# Side-by-side benchmark of shoal-server against redis-server with the shared bench scripts
# (../shared/bench/redis-single.sh and redis-memory.sh, next to the repository), interleaved:
#   single(redis)  single(shoal)  memory(redis)  memory(shoal)
# then scripts/bench-evict.sh (SET -P 16 under maxmemory with allkeys-lru, every write evicting;
# it interleaves redis and shoal itself) and scripts/bench-aof.sh (SET -P 16 with the AOF on,
# appendfsync everysec and always), then ONE table of shoal/redis ratios, printed and
# written to bench-results/latest.md.
#
#   scripts/bench.sh                                   # full run (~5 min)
#   REPEATS=1 PLAN="1:20000:none 16:20000:none" KEYS=20000 scripts/bench.sh   # quick look
#   SHOAL_SERVER=/usr/bin/redis-server scripts/bench.sh   # redis vs redis: checks the script itself
#
# Environment (everything else -- REPEATS, PLAN, KEYS, VALUE_SIZE, PORT, CLIENTS, DATASIZE,
# SERVER_CPUS, CLIENT_CPUS, QUIET_*, EXTRA_SERVER_ARGS, ... -- passes through to the bench scripts):
#   SHOAL_SERVER          candidate binary (default <repo>/bin/shoal-server, built if missing)
#   REDIS_BASELINE        baseline binary (default redis-server)
#   BENCH_DIR             shared bench scripts (default $(git rev-parse --show-toplevel)/../shared/bench)
#   SHOAL_DAEMONIZE       yes | no | auto (default auto: probe whether --daemonize yes --pidfile works)
#   SHOAL_LOAD_METHODS    memory load methods for shoal (default auto: "pipe populate" if
#                         DEBUG POPULATE works with --enable-debug-command local, else "pipe")
#   REDIS_LOAD_METHODS    for redis (default: the same as shoal, so both do the same work)
#   LOAD_METHODS          if set, used for both
#   SHOAL_CLUSTER_MODES   memory runs with cluster-enabled no/yes (default "no" until shoal has
#                         cluster mode); REDIS_CLUSTER_MODES defaults to the same; CLUSTER_MODES
#                         if set is used for both
#   BENCH_SCRIPT_TIMEOUT  wall-clock limit per bench script run, seconds (default 900)
#   BENCH_SCRIPTS         the shared scripts to run (default "redis-single.sh redis-memory.sh";
#                         "" runs none, e.g. to look at the eviction row alone)
#   BENCH_EVICT           yes | no: the eviction row (default yes; its knobs EVICT_* are in
#                         scripts/bench-evict.sh; REPEATS applies to it too)
#   BENCH_AOF             yes | no: the append-only file rows (default yes; knobs AOF_* in
#                         scripts/bench-aof.sh; REPEATS applies to it too)
#   BENCH_OUT             where the full logs go (default /tmp/shoal-bench.<timestamp>)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

top=$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null || echo "$ROOT")
BENCH_DIR=${BENCH_DIR:-$top/../shared/bench}
[[ -x $BENCH_DIR/redis-single.sh && -x $BENCH_DIR/redis-memory.sh ]] ||
  die "shared bench scripts not found in BENCH_DIR=$BENCH_DIR (expected ../shared/bench beside the repo)"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)

for t in redis-cli redis-benchmark timeout; do command -v "$t" >/dev/null || die "$t not found (apt-get install -y redis-tools)"; done
REDIS_BASELINE=${REDIS_BASELINE:-redis-server}
command -v "$REDIS_BASELINE" >/dev/null || die "baseline server '$REDIS_BASELINE' not found (apt-get install -y redis-server)"
REDIS_BASELINE=$(command -v "$REDIS_BASELINE")

if [[ -n ${SHOAL_SERVER:-} ]]; then
  SHOAL=$(command -v "$SHOAL_SERVER" || true)
  [[ -n $SHOAL && -x $SHOAL ]] || die "SHOAL_SERVER=$SHOAL_SERVER is not an executable"
  [[ $SHOAL == /* ]] || SHOAL=$PWD/$SHOAL
else
  SHOAL=$ROOT/bin/shoal-server
  if [[ ! -x $SHOAL ]]; then
    log "building $SHOAL"
    (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server) || die "build failed"
  fi
fi

STAMP=$(date +%Y%m%dT%H%M%S)
OUT=${BENCH_OUT:-/tmp/shoal-bench.$STAMP}
mkdir -p "$OUT"
BENCH_SCRIPT_TIMEOUT=${BENCH_SCRIPT_TIMEOUT:-900}

# ---- probes: what the candidate server supports ------------------------------------------
PROBE_PID=""
PROBE_DIR=""
RUN_PID="" # the `timeout` wrapping a bench script: it has its own process group, so a Ctrl-C
# does not reach the script; on exit we TERM it and timeout passes that on
on_exit() {
  if [[ -n $RUN_PID ]]; then kill -TERM "$RUN_PID" 2>/dev/null || true; wait "$RUN_PID" 2>/dev/null || true; fi
  probe_cleanup
}
probe_cleanup() {
  if [[ -n $PROBE_PID ]] && kill -0 "$PROBE_PID" 2>/dev/null; then
    kill -TERM "$PROBE_PID" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$PROBE_PID" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$PROBE_PID" 2>/dev/null; then kill -KILL "$PROBE_PID" 2>/dev/null || true; fi
  fi
  PROBE_PID=""
  if [[ -n $PROBE_DIR ]]; then rm -rf "$PROBE_DIR"; fi
  PROBE_DIR=""
}
trap on_exit EXIT
trap 'exit 130' INT TERM

free_port() {
  local i p
  for ((i = 0; i < 100; i++)); do
    p=$((12000 + RANDOM % 4000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}
ping_ok() { [[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null) == PONG ]]; }
wait_ping() { local i; for ((i = 0; i < 100; i++)); do ping_ok "$1" && return 0; sleep 0.05; done; return 1; }

# probe_daemonize BIN -> prints yes|no
probe_daemonize() {
  local bin=$1 port launcher i rc=no
  PROBE_DIR=$(mktemp -d /tmp/shoal-bench-probe.XXXXXX)
  port=$(free_port) || { echo no; return; }
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$PROBE_DIR" \
    --daemonize yes --pidfile "$PROBE_DIR/server.pid" --logfile "$PROBE_DIR/server.log" \
    >"$PROBE_DIR/stdout.log" 2>&1 &
  launcher=$!
  for ((i = 0; i < 100; i++)); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$launcher" 2>/dev/null; then
    PROBE_PID=$launcher # still in the foreground after 5 s: it does not daemonize
  elif wait "$launcher" 2>/dev/null; then # the launcher exited 0: a daemon should be running
    for ((i = 0; i < 100; i++)); do [[ -s $PROBE_DIR/server.pid ]] && break; sleep 0.05; done
    PROBE_PID=$(cat "$PROBE_DIR/server.pid" 2>/dev/null || true)
    if [[ -n $PROBE_PID ]] && wait_ping "$port"; then rc=yes; fi
  fi
  probe_cleanup
  echo "$rc"
}

# probe_populate BIN -> prints "pipe populate" or "pipe"
probe_populate() {
  local bin=$1 port rc=pipe
  PROBE_DIR=$(mktemp -d /tmp/shoal-bench-probe.XXXXXX)
  port=$(free_port) || { echo pipe; return; }
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$PROBE_DIR" \
    --daemonize no --enable-debug-command local >"$PROBE_DIR/server.log" 2>&1 &
  PROBE_PID=$!
  if wait_ping "$port" &&
    [[ $(timeout 5 redis-cli -h 127.0.0.1 -p "$port" debug populate 100 key 32 2>/dev/null) == OK ]] &&
    [[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$port" dbsize 2>/dev/null) == 100 ]]; then
    rc="pipe populate"
  fi
  probe_cleanup
  echo "$rc"
}

SHOAL_DAEMONIZE=${SHOAL_DAEMONIZE:-auto}
if [[ $SHOAL_DAEMONIZE == auto ]]; then
  SHOAL_DAEMONIZE=$(probe_daemonize "$SHOAL")
  log "probe: $(basename "$SHOAL") --daemonize yes works: $SHOAL_DAEMONIZE"
fi
if [[ -n ${LOAD_METHODS:-} ]]; then
  SHOAL_LOAD_METHODS=$LOAD_METHODS REDIS_LOAD_METHODS=$LOAD_METHODS
fi
SHOAL_LOAD_METHODS=${SHOAL_LOAD_METHODS:-auto}
if [[ $SHOAL_LOAD_METHODS == auto ]]; then
  SHOAL_LOAD_METHODS=$(probe_populate "$SHOAL")
  log "probe: memory load methods for $(basename "$SHOAL"): $SHOAL_LOAD_METHODS"
fi
REDIS_LOAD_METHODS=${REDIS_LOAD_METHODS:-$SHOAL_LOAD_METHODS}
if [[ -n ${CLUSTER_MODES:-} ]]; then
  SHOAL_CLUSTER_MODES=$CLUSTER_MODES REDIS_CLUSTER_MODES=$CLUSTER_MODES
fi
SHOAL_CLUSTER_MODES=${SHOAL_CLUSTER_MODES:-no}
REDIS_CLUSTER_MODES=${REDIS_CLUSTER_MODES:-$SHOAL_CLUSTER_MODES}
unset LOAD_METHODS CLUSTER_MODES DAEMONIZE REDIS_SERVER LABEL

# ---- runs ----------------------------------------------------------------------------------
# run_one SCRIPT WHO -> log in $OUT/<script>-<who>.log
run_one() {
  local script=$1 who=$2 bin daemonize methods cmodes rc=0
  if [[ $who == redis ]]; then
    bin=$REDIS_BASELINE daemonize=yes methods=$REDIS_LOAD_METHODS cmodes=$REDIS_CLUSTER_MODES
  else
    bin=$SHOAL daemonize=$SHOAL_DAEMONIZE methods=$SHOAL_LOAD_METHODS cmodes=$SHOAL_CLUSTER_MODES
  fi
  local logf=$OUT/${script%.sh}-$who.log
  log "run $script with $who ($bin; DAEMONIZE=$daemonize) -> $logf"
  [[ $script == redis-memory.sh ]] && log "    LOAD_METHODS=\"$methods\" CLUSTER_MODES=\"$cmodes\""
  REDIS_SERVER=$bin LABEL=$who DAEMONIZE=$daemonize LOAD_METHODS=$methods CLUSTER_MODES=$cmodes \
    RESULTS_DIR=${RESULTS_DIR:-$OUT/raw} \
    timeout -k 15 "$BENCH_SCRIPT_TIMEOUT" "$BENCH_DIR/$script" >"$logf" 2>"$logf.err" </dev/null &
  RUN_PID=$!
  wait "$RUN_PID" || rc=$?
  RUN_PID=""
  if ((rc != 0)); then
    log "$script with $who failed (rc=$rc); last lines of $logf.err:"
    tail -n 15 "$logf.err" >&2 || true
    return 1
  fi
}

BENCH_SCRIPTS=${BENCH_SCRIPTS-redis-single.sh redis-memory.sh}
failed=0
for script in $BENCH_SCRIPTS; do
  for who in redis shoal; do
    run_one "$script" "$who" || failed=1
  done
done

# the eviction row: "metric|case|redis|shoal|better" lines in $OUT/evict.rows; a server that
# refuses maxmemory gets "refused" there (the script still succeeds)
: >"$OUT/evict.rows"
if [[ ${BENCH_EVICT:-yes} == yes ]]; then
  log "run bench-evict.sh (redis and shoal interleaved) -> $OUT/bench-evict.log"
  SHOAL_SERVER=$SHOAL REDIS_BASELINE=$REDIS_BASELINE EVICT_ROWS=$OUT/evict.rows \
    timeout -k 15 "$BENCH_SCRIPT_TIMEOUT" "$ROOT/scripts/bench-evict.sh" >"$OUT/bench-evict.log" 2>"$OUT/bench-evict.log.err" </dev/null &
  RUN_PID=$!
  rc=0
  wait "$RUN_PID" || rc=$?
  RUN_PID=""
  if ((rc != 0)); then
    log "bench-evict.sh failed (rc=$rc); last lines of $OUT/bench-evict.log.err:"
    tail -n 15 "$OUT/bench-evict.log.err" >&2 || true
    failed=1
  fi
fi

# the AOF rows (scripts/bench-aof.sh: SET -P 16 with appendfsync everysec and always)
: >"$OUT/aof.rows"
if [[ ${BENCH_AOF:-yes} == yes ]]; then
  log "run bench-aof.sh (redis and shoal interleaved) -> $OUT/bench-aof.log"
  SHOAL_SERVER=$SHOAL REDIS_BASELINE=$REDIS_BASELINE AOF_ROWS=$OUT/aof.rows \
    timeout -k 15 "$BENCH_SCRIPT_TIMEOUT" "$ROOT/scripts/bench-aof.sh" >"$OUT/bench-aof.log" 2>"$OUT/bench-aof.log.err" </dev/null &
  RUN_PID=$!
  rc=0
  wait "$RUN_PID" || rc=$?
  RUN_PID=""
  if ((rc != 0)); then
    log "bench-aof.sh failed (rc=$rc); last lines of $OUT/bench-aof.log.err:"
    tail -n 15 "$OUT/bench-aof.log.err" >&2 || true
    failed=1
  fi
fi

# ---- table -----------------------------------------------------------------------------------
# single_rows LOG -> "test|P|requests|keyspace|rps|p99|srv" from the summary table (by column name)
single_rows() {
  [[ -f $1 ]] || return 0
  awk '/^# summary/ { s = 1; next }
    s && $1 == "mode" { for (i = 1; i <= NF; i++) col[$i] = i; h = 1; next }
    s && h && /^\(/ { exit }
    s && h && NF > 5 { print $col["test"] "|" $col["P"] "|" $col["requests"] "|" $col["keyspace"] "|" $col["rps_med"] "|" $col["p99_ms"] "|" $col["srv_us/r"] }' "$1"
}
# memory_rows LOG -> "method|cluster|used_mem/key|VmRSS/key|rss/key|load_s"
memory_rows() {
  [[ -f $1 ]] || return 0
  awk '/^# summary/ { s = 1; next }
    s && $1 == "method" { for (i = 1; i <= NF; i++) col[$i] = i; h = 1; next }
    s && h && NF > 5 { print $col["method"] "|" $col["cluster"] "|" $col["used_mem/key"] "|" $col["VmRSS/key"] "|" $col["rss/key"] "|" $col["load_s"] }' "$1"
}

single_rows "$OUT/redis-single-redis.log" >"$OUT/single-redis.rows"
single_rows "$OUT/redis-single-shoal.log" >"$OUT/single-shoal.rows"
memory_rows "$OUT/redis-memory-redis.log" >"$OUT/memory-redis.rows"
memory_rows "$OUT/redis-memory-shoal.log" >"$OUT/memory-shoal.rows"

table=$(awk -F'|' '
  function ratio(a, b) { return (a == "" || b == "" || a + 0 == 0 || b + 0 == 0) ? "n/a" : sprintf("%.2f", b / a) }
  function val(x) { return (x == "" || x + 0 == 0) ? "-" : x }
  function row(metric, cas, better, a, b) {
    printf "| %-16s | %-30s | %12s | %12s | %11s | %-6s |\n", metric, cas, val(a), val(b), ratio(a, b), better
  }
  FILENAME ~ /single-redis/ { k = $1 "|" $2 "|" $3 "|" $4; if (!(k in R)) ord[++n] = k; R[k] = $0; next }
  FILENAME ~ /single-shoal/ { k = $1 "|" $2 "|" $3 "|" $4; if (!(k in R) && !(k in S)) ord[++n] = k; S[k] = $0; next }
  FILENAME ~ /memory-redis/ { k = $1 "|" $2; if (!(k in MR)) mord[++m] = k; MR[k] = $0; next }
  FILENAME ~ /memory-shoal/ { k = $1 "|" $2; if (!(k in MR) && !(k in MS)) mord[++m] = k; MS[k] = $0; next }
  FILENAME ~ /(evict|aof).rows/ { ev[++e] = $0; next }
  END {
    printf "| %-16s | %-30s | %12s | %12s | %11s | %-6s |\n", "metric", "case", "redis", "shoal", "shoal/redis", "better"
    printf "|%s|%s|%s|%s|%s|%s|\n", "------------------", "--------------------------------", "-------------:", "-------------:", "------------:", "--------"
    split("srv_us/r rps p99_ms", mets, " "); split("lower higher lower", bet, " "); split("7 5 6", fld, " ")
    for (j = 1; j <= 3; j++)
      for (i = 1; i <= n; i++) {
        k = ord[i]; split(k, f, "|"); split(R[k], a, "|"); split(S[k], b, "|")
        cas = sprintf("%s P%s n=%s%s", f[1], f[2], f[3], (f[4] == "none" ? "" : " r=" f[4]))
        row(mets[j], cas, bet[j], a[fld[j]], b[fld[j]])
      }
    split("used_mem/key VmRSS/key rss/key load_s", mm, " ")
    for (j = 1; j <= 4; j++)
      for (i = 1; i <= m; i++) {
        k = mord[i]; split(k, f, "|"); split(MR[k], a, "|"); split(MS[k], b, "|")
        row(mm[j] (j < 4 ? " (B)" : ""), "load=" f[1] " cluster=" f[2], "lower", a[j + 2], b[j + 2])
      }
    # eviction rows: a server that refused the configuration shows "refused"
    for (i = 1; i <= e; i++) {
      split(ev[i], f, "|")
      if (f[3] == "refused" || f[4] == "refused")
        printf "| %-16s | %-30s | %12s | %12s | %11s | %-6s |\n", f[1], f[2], (f[3] == "" ? "-" : f[3]), (f[4] == "" ? "-" : f[4]), "n/a", f[5]
      else
        row(f[1], f[2], f[5], f[3], f[4])
    }
  }' "$OUT/single-redis.rows" "$OUT/single-shoal.rows" "$OUT/memory-redis.rows" "$OUT/memory-shoal.rows" "$OUT/evict.rows" "$OUT/aof.rows")

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
dirty=""
if git -C "$ROOT" status --porcelain 2>/dev/null | grep -q .; then dirty=" (+ local changes)"; fi
ver() { "$1" --version 2>/dev/null | head -1 || echo "?"; }
report=$(
  echo "# shoal vs redis benchmark -- $(date '+%Y-%m-%d %H:%M:%S %Z')"
  echo
  echo "- shoal: \`$SHOAL\` ($(ver "$SHOAL")), commit $commit$dirty, DAEMONIZE=$SHOAL_DAEMONIZE"
  echo "- redis: \`$REDIS_BASELINE\` ($(ver "$REDIS_BASELINE"))"
  echo "- host: $(nproc) cpus, kernel $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
  shared=$(echo $BENCH_SCRIPTS | tr ' ' ',') # word splitting: the list
  echo "- scripts: ${shared:+$BENCH_DIR/{$shared} and }scripts/bench-evict.sh (BENCH_EVICT=${BENCH_EVICT:-yes}), scripts/bench-aof.sh (BENCH_AOF=${BENCH_AOF:-yes}), interleaved redis/shoal; REPEATS=${REPEATS:-3}" \
    "PLAN=\"${PLAN:-default}\" KEYS=${KEYS:-1000000} VALUE_SIZE=${VALUE_SIZE:-32}" \
    "load methods redis=\"$REDIS_LOAD_METHODS\" shoal=\"$SHOAL_LOAD_METHODS\"," \
    "cluster modes redis=\"$REDIS_CLUSTER_MODES\" shoal=\"$SHOAL_CLUSTER_MODES\""
  echo "- logs: $OUT"
  echo
  echo "$table"
  echo
  echo "shoal/redis: for srv_us/r (server CPU per request, the steadiest figure on this shared 2-core box),"
  echo "p99 and bytes/key lower is better; for rps higher is better. Values are medians over REPEATS runs."
  echo "rps rows with a high other% in the logs are noise. \"-\" = not reported by that server."
  echo "SET P16 evict rows: maxmemory with allkeys-lru, filled past the limit first; evicted/SET ~ 1 means every"
  echo "write evicted; \"refused\" = that server does not start with maxmemory set (see $OUT/bench-evict.log)."
  if grep -q 'refused `' "$OUT/bench-evict.log" 2>/dev/null; then grep 'refused `' "$OUT/bench-evict.log"; fi
  ((failed)) && echo && echo "WARNING: at least one bench script failed; see the logs above."
  # warnings the bench scripts logged (e.g. "dbsize=..., expected N": the memory figures of that
  # server are then not trustworthy)
  warns=$(grep -h 'WARNING' "$OUT"/*.log.err 2>/dev/null | sed -E 's/^\[[^]]*\] //' | sort | uniq -c | head -n 10 || true)
  if [[ -n $warns ]]; then
    echo
    echo "Warnings from the bench scripts (count, message):"
    echo '```'
    echo "$warns"
    echo '```'
  fi
  true
)
mkdir -p "$ROOT/bench-results"
printf '%s\n' "$report" >"$ROOT/bench-results/latest.md"
printf '%s\n' "$report"
log "table written to $ROOT/bench-results/latest.md"
exit "$failed"
