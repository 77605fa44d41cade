#!/usr/bin/env bash
# Memory per key for collection types, shoal vs redis-server in one run:
#   1M hashes of 5 fields (HSET h:<i> f1 v f2 v ... f5 v)
#   1M sorted sets of 10 members (ZADD z:<i> 1 m1 ... 10 m10)
# loaded with redis-cli --pipe into a fresh server each time; reports VmRSS
# bytes per key ((after - before) / keys, read from /proc) and the ratio.
#
#   scripts/bench-types-memory.sh                 # KEYS=1000000
#   KEYS=100000 scripts/bench-types-memory.sh     # quick look
#
# Servers bind 127.0.0.1 only and are stopped by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEYS=${KEYS:-1000000}
PORT=${PORT:-6399}
SHOAL=${SHOAL_SERVER:-$ROOT/bin/shoal-server}
REDIS=${REDIS_SERVER:-redis-server}
WORK=$(mktemp -d /tmp/shoal-typemem.XXXXXX)
PID=""
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

log() { printf '[typemem %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# gen TYPE: the RESP stream for KEYS keys of that type.
gen() {
  awk -v n="$KEYS" -v t="$1" 'BEGIN {
    for (i = 0; i < n; i++) {
      if (t == "hash") {
        k = "h:" i
        printf "*12\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n", length(k), k
        for (f = 1; f <= 5; f++) { fn = "field" f; v = "value-" i "-" f; printf "$%d\r\n%s\r\n$%d\r\n%s\r\n", length(fn), fn, length(v), v }
      } else {
        k = "z:" i
        printf "*22\r\n$4\r\nZADD\r\n$%d\r\n%s\r\n", length(k), k
        for (m = 1; m <= 10; m++) { s = m ""; mn = "member-" m; printf "$%d\r\n%s\r\n$%d\r\n%s\r\n", length(s), s, length(mn), mn }
      }
    }
  }'
}

vmrss() { awk '/^VmRSS:/{print $2 * 1024}' "/proc/$1/status"; }

# measure SERVER TYPE -> bytes per key
measure() {
  local bin=$1 type=$2 dir=$WORK/$RANDOM
  mkdir -p "$dir"
  "$bin" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
  PID=$!
  for ((i = 0; i < 100; i++)); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
  sleep 0.3
  local before after
  before=$(vmrss "$PID")
  gen "$type" | redis-cli -p "$PORT" --pipe >"$dir/pipe.log" 2>&1
  grep -q "errors: 0" "$dir/pipe.log" || { cat "$dir/pipe.log" >&2; exit 1; }
  sleep 1
  after=$(vmrss "$PID")
  local n; n=$(redis-cli -p "$PORT" dbsize)
  [[ $n == "$KEYS" ]] || log "WARNING: dbsize=$n, expected $KEYS"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  awk -v a="$after" -v b="$before" -v k="$KEYS" 'BEGIN { printf "%.1f", (a - b) / k }'
}

echo "| type | keys | redis VmRSS B/key | shoal VmRSS B/key | shoal/redis |"
echo "|---|---|---:|---:|---:|"
for type in hash zset; do
  r=$(measure "$REDIS" "$type")
  s=$(measure "$SHOAL" "$type")
  printf "| %s | %d | %s | %s | %s |\n" \
    "$([[ $type == hash ]] && echo "hash, 5 fields" || echo "zset, 10 members")" "$KEYS" "$r" "$s" \
    "$(awk -v s="$s" -v r="$r" 'BEGIN { printf "%.2f", s / r }')"
done
