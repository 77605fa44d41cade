#!/usr/bin/env bash
# shellcheck disable=SC2317 # functions called only from traps look unreachable
# Transactions and scripting, shoal-server vs redis-server in one run (scripts/benchtx):
# EVALSHA of a 3-call script and MULTI/EXEC of 3 SETs, 50 go-redis clients, each server
# alone on 127.0.0.1, alternating servers REPEATS times; prints the best rps of each.
#
#   scripts/bench-scripting.sh                       # DURATION=5s REPEATS=2 CLIENTS=50
#   SHOAL_SERVER=/usr/bin/redis-server scripts/bench-scripting.sh   # checks the script itself
#
# Only the servers this script starts are signalled, by PID.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${DURATION:-5s}
REPEATS=${REPEATS:-2}
CLIENTS=${CLIENTS:-50}
REDIS_BASELINE=${REDIS_BASELINE:-redis-server}
SHOAL=${SHOAL_SERVER:-$ROOT/bin/shoal-server}
log() { printf '[bench-scripting %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[[ -x $SHOAL ]] || (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server)
command -v "$REDIS_BASELINE" >/dev/null || { log "redis-server not found"; exit 1; }
TOOL=$(mktemp -d /tmp/benchtx.XXXXXX)
(cd "$ROOT" && go build -o "$TOOL/benchtx" ./scripts/benchtx)

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$TOOL"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

start() { # name binary -> prints port; PID appended
  local port; port=$(free_port)
  "$2" --port "$port" --bind 127.0.0.1 --save "" --appendonly no >"$TOOL/$1.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  echo "$port $!"
}

declare -A BEST
for r in $(seq 1 "$REPEATS"); do
  for name in redis shoal; do
    bin=$REDIS_BASELINE; [[ $name == shoal ]] && bin=$SHOAL
    read -r port pid < <(start "$name" "$bin")
    for mode in evalsha multi; do
      out=$("$TOOL/benchtx" -addr "127.0.0.1:$port" -mode "$mode" -clients "$CLIENTS" -duration "$DURATION")
      log "run $r $name: $out"
      rps=${out#* }; rps=${rps%% *}
      key=$name/$mode
      if [[ -z ${BEST[$key]:-} || $rps -gt ${BEST[$key]} ]]; then BEST[$key]=$rps; fi
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done

printf '\n| workload (%s clients, %s) | redis-server rps | shoal rps | shoal/redis |\n|---|---|---|---|\n' "$CLIENTS" "$DURATION"
for mode in evalsha multi; do
  r=${BEST[redis/$mode]}; s=${BEST[shoal/$mode]}
  label="EVALSHA (3 redis.call)"; [[ $mode == multi ]] && label="MULTI + 3 SET + EXEC"
  printf '| %s | %s | %s | %s |\n' "$label" "$r" "$s" "$(python3 -c "print(f'{$s/$r:.2f}')")"
done
