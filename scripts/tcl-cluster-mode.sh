#!/usr/bin/env bash
# shellcheck disable=SC2317 # functions called only from traps look unreachable
# Run Redis 7.0.15 tcl units in --cluster-mode against ONE fresh shoal-server started with
# cluster-enabled yes and every slot assigned (runtest's cluster mode: single database,
# cluster:skip tests skipped), with the skips of scripts/tcl-skips.txt.
#
#   scripts/tcl-cluster-mode.sh                       # unit/multi unit/scripting unit/functions
#   scripts/tcl-cluster-mode.sh unit/type/list        # chosen units
#
# Environment: SHOAL_SERVER (default bin/shoal-server), REDIS_SRC (default /tmp/src/redis-7.0.15),
# TCL_UNIT_TIMEOUT (default 200 s per unit). Only the server this script starts is signalled.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER=${SHOAL_SERVER:-$ROOT/bin/shoal-server}
REDIS_SRC=${REDIS_SRC:-/tmp/src/redis-7.0.15}
TIMEOUT=${TCL_UNIT_TIMEOUT:-200}
UNITS=${*:-unit/multi unit/scripting unit/functions}
TAGS="-needs:repl -needs:save -needs:reset -needs:config-maxmemory -needs:pfdebug -needs:latency -needs:config-resetstat"
log() { printf '[tcl-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[[ -x $SERVER ]] || (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server)
[[ -x $REDIS_SRC/runtest ]] || { log "Redis source not found in REDIS_SRC=$REDIS_SRC"; exit 2; }

WORK=$(mktemp -d /tmp/shoal-tcl-cluster.XXXXXX)
cp -a "$REDIS_SRC/runtest" "$REDIS_SRC/tests" "$WORK/"
cat "$ROOT/scripts/tcl-refused-overrides.tcl" >>"$WORK/tests/support/server.tcl"
mkdir -p "$WORK/src"
for b in redis-server redis-cli redis-benchmark; do ln -sf "$(command -v "$b" || echo /usr/bin/$b)" "$WORK/src/$b"; done

# The cluster bus listens on port+10000, so the client port must stay below 55536.
PORT=$(python3 -c '
import socket
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p <= 55535:
        print(p); break
')
BASEPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"$SERVER" --port "$PORT" --bind 127.0.0.1 --dir "$WORK" --cluster-enabled yes --cluster-config-file "$WORK/nodes.conf" \
  --enable-debug-command yes --save "" --appendonly no >"$WORK/server.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p "$PORT" cluster addslotsrange 0 16383 >/dev/null
for _ in $(seq 1 100); do redis-cli -p "$PORT" cluster info | grep -q 'cluster_state:ok' && break; sleep 0.1; done

SKIP=()
while IFS= read -r line; do
  [[ -z ${line// /} || $line == \#* ]] && continue
  SKIP+=(--skiptest "${line%% | *}")
done <"$ROOT/scripts/tcl-skips.txt"

rc=0
printf '%-24s %6s %6s %6s\n' unit ok err exc
for u in $UNITS; do
  out=$WORK/$(basename "$u").log
  # shellcheck disable=SC2086 # TAGS is a word list
  (cd "$WORK" && timeout -k 10 "$TIMEOUT" ./runtest --host 127.0.0.1 --port "$PORT" --baseport "$BASEPORT" \
    --cluster-mode --single "$u" --durable --tags "$TAGS" "${SKIP[@]}" >"$out" 2>&1 </dev/null) || true
  ok=$(grep -c '\[.*ok.*\]: ' "$out" || true)
  err=$(grep -c '^\[.*err.*\]: ' "$out" || true)
  exc=$(grep -c '\[.*exception.*\]' "$out" || true)
  grep -q 'All tests passed without errors' "$out" || rc=1
  printf '%-24s %6s %6s %6s\n' "$u" "$ok" "$err" "$exc"
done
log "logs in $WORK"
exit $rc
