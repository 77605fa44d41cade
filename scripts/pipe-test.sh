#!/usr/bin/env bash
# The "must show" check: bulk load through `redis-cli --pipe` and a redis-benchmark run without
# a single error, against a freshly started shoal-server.
#
#   1. 1,000,000 "SET key:<i> <32-byte value>" in RESP (the same stream as
#      ../shared/bench/redis-memory.sh) | redis-cli --pipe
#      -> the output must say "errors: 0, replies: 1000000", DBSIZE must be 1000000 and
#         GET key:12345 must return its value
#   2. redis-benchmark -p P -t set,get,incr,mset -c 50 -P 16 -n 200000 -q
#      -> exit status 0, one "requests per second" line per test, no line mentioning an error
#
#   scripts/pipe-test.sh
#   SHOAL_SERVER=/usr/bin/redis-server scripts/pipe-test.sh     # the same checks against Redis
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), PIPE_KEYS
# (1000000), PIPE_VALUE_SIZE (32), BENCH_REQUESTS (200000), PIPE_TIMEOUT (180 s per step),
# PIPE_KEEP=1 keeps the server's directory and log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PIPE_KEYS=${PIPE_KEYS:-1000000}
PIPE_VALUE_SIZE=${PIPE_VALUE_SIZE:-32}
BENCH_REQUESTS=${BENCH_REQUESTS:-200000}
PIPE_TIMEOUT=${PIPE_TIMEOUT:-180}
REDIS_CLI=${REDIS_CLI:-redis-cli}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}

log() { printf '[pipe-test %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for t in "$REDIS_CLI" "$REDIS_BENCHMARK" timeout awk; do
  command -v "$t" >/dev/null || die "$t not found (apt-get install -y redis-tools)"
done
if [[ -n ${SHOAL_SERVER:-} ]]; then
  SERVER=$(command -v "$SHOAL_SERVER" || true)
  [[ -n $SERVER && -x $SERVER ]] || die "SHOAL_SERVER=$SHOAL_SERVER is not an executable"
else
  SERVER=$ROOT/bin/shoal-server
  if [[ ! -x $SERVER ]]; then
    log "building $SERVER"
    (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server) || die "build failed"
  fi
fi

DIR=$(mktemp -d /tmp/shoal-pipe-test.XXXXXX)
SRV_PID=""
SRV_START=""
proc_starttime() { sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }
pid_alive() {
  local st
  st=$(sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | awk '{print $1}') || return 1
  [[ -n $st && $st != Z ]]
}
ours() { [[ -n $SRV_PID && $(proc_starttime "$SRV_PID") == "$SRV_START" ]]; }
stop_server() {
  [[ -n $SRV_PID ]] || return 0
  local i
  if pid_alive "$SRV_PID" && ours; then
    kill -TERM "$SRV_PID" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do pid_alive "$SRV_PID" || break; sleep 0.05; done
    if pid_alive "$SRV_PID" && ours; then
      log "server pid $SRV_PID ignored SIGTERM for 5 s; sending SIGKILL"
      kill -KILL "$SRV_PID" 2>/dev/null || true
    fi
  fi
  wait "$SRV_PID" 2>/dev/null || true
  SRV_PID=""
}
cleanup() {
  local rc=$?
  stop_server
  if [[ ${PIPE_KEEP:-0} == 1 ]]; then log "kept $DIR"; else rm -rf "$DIR"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
cli() { timeout 30 "$REDIS_CLI" -h 127.0.0.1 -p "$PORT" "$@"; }

# ---- start one server (a free port below the ephemeral range; retried if taken) ---------
started=0
for ((attempt = 1; attempt <= 5 && !started; attempt++)); do
  PORT=""
  for ((i = 0; i < 100; i++)); do
    p=$((12000 + RANDOM % 4000))
    port_busy "$p" || { PORT=$p; break; }
  done
  [[ -n $PORT ]] || die "no free port"
  : >"$DIR/server.log"
  "$SERVER" --port "$PORT" --bind 127.0.0.1 --dir "$DIR" --save "" --appendonly no \
    --daemonize no --logfile "" >>"$DIR/server.log" 2>&1 &
  SRV_PID=$!
  SRV_START=$(proc_starttime "$SRV_PID")
  for ((i = 0; i < 200; i++)); do # 10 s
    pid_alive "$SRV_PID" || break
    if grep -q 'Ready to accept connections' "$DIR/server.log" && [[ $(cli ping 2>/dev/null) == PONG ]]; then
      started=1
      break
    fi
    sleep 0.05
  done
  if ((!started)); then
    if grep -qE 'Failed listening|[Aa]ddress already in use' "$DIR/server.log"; then
      log "port $PORT taken, retrying"
      stop_server
      continue
    fi
    tail -n 30 "$DIR/server.log" >&2 || true
    die "server did not become ready within 10 s"
  fi
done
((started)) || die "could not start the server"
log "server $SERVER pid $SRV_PID on 127.0.0.1:$PORT"

fails=0
check() { # check NAME CONDITION-RESULT(0/1) DETAIL
  if [[ $2 == 0 ]]; then
    printf 'PASS  %s\n' "$1"
  else
    printf 'FAIL  %s: %s\n' "$1" "$3"
    fails=$((fails + 1))
  fi
}

# ---- 1. redis-cli --pipe -------------------------------------------------------------
# RESP "SET key:<i> <value>" for i in 0..N-1; value = i zero-padded to SIZE digits
resp_stream() {
  awk -v n="$1" -v size="$2" 'BEGIN {
    fmt = "%0" size "d"
    for (i = 0; i < n; i++) {
      k = "key:" i; v = sprintf(fmt, i)
      printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v
    }
  }'
}
log "loading $PIPE_KEYS keys through redis-cli --pipe"
t0=$(date +%s.%N)
rc=0
resp_stream "$PIPE_KEYS" "$PIPE_VALUE_SIZE" |
  timeout "$PIPE_TIMEOUT" "$REDIS_CLI" -h 127.0.0.1 -p "$PORT" --pipe >"$DIR/pipe.log" 2>&1 || rc=$?
t1=$(date +%s.%N)
tr '\r' '\n' <"$DIR/pipe.log" | sed 's/^/    /'
summary=$(grep -E '^errors: [0-9]+, replies: [0-9]+' "$DIR/pipe.log" | tail -n 1 || true)
want="errors: 0, replies: $PIPE_KEYS"
check "redis-cli --pipe of $PIPE_KEYS SETs ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s)" \
  "$([[ $rc == 0 && $summary == "$want" ]] && echo 0 || echo 1)" "exit $rc, got '${summary:-no summary line}', want '$want'"

dbsize=$(cli dbsize 2>&1 | tr -d '\r' || true)
check "DBSIZE = $PIPE_KEYS" "$([[ $dbsize == "$PIPE_KEYS" ]] && echo 0 || echo 1)" "got '$dbsize'"

if ((PIPE_KEYS > 12345)); then
  want_v=$(printf "%0${PIPE_VALUE_SIZE}d" 12345)
  got_v=$(cli get key:12345 2>&1 | tr -d '\r' || true)
  check "GET key:12345 = $want_v" "$([[ $got_v == "$want_v" ]] && echo 0 || echo 1)" "got '$got_v'"
fi

# ---- 2. redis-benchmark ---------------------------------------------------------------
log "redis-benchmark -t set,get,incr,mset -c 50 -P 16 -n $BENCH_REQUESTS -q"
rc=0
timeout "$PIPE_TIMEOUT" "$REDIS_BENCHMARK" -h 127.0.0.1 -p "$PORT" -t set,get,incr,mset -c 50 -P 16 \
  -n "$BENCH_REQUESTS" -q </dev/null >"$DIR/bench.raw" 2>&1 || rc=$?
# progress updates are \r-separated; keep the final line of each
tr '\r' '\n' <"$DIR/bench.raw" | grep -v '^[[:space:]]*$' | grep -vE 'rps=[0-9.]+ \(overall' >"$DIR/bench.log" || true
sed 's/^/    /' "$DIR/bench.log"
check "redis-benchmark exit status" "$([[ $rc == 0 ]] && echo 0 || echo 1)" "exit $rc"
errs=$(tr '\r' '\n' <"$DIR/bench.raw" | grep -iE 'error|err |wrongtype|unknown command|could not connect|connection reset' || true)
check "redis-benchmark: no error lines" "$([[ -z $errs ]] && echo 0 || echo 1)" "$(head -n 3 <<<"$errs" | tr '\n' ' ')"
for t in SET GET INCR "MSET (10 keys)"; do
  if grep -F "$t: " "$DIR/bench.log" | grep -q "requests per second"; then r=0; else r=1; fi
  check "redis-benchmark $t result line" "$r" "missing"
done

if ! pid_alive "$SRV_PID"; then
  check "server still running" 1 "it exited; last log lines: $(tail -n 5 "$DIR/server.log" | tr '\n' ' ')"
fi

echo
if ((fails)); then
  echo "pipe-test: FAIL ($fails check(s) failed) against $SERVER"
  exit 1
fi
echo "pipe-test: PASS against $SERVER"
