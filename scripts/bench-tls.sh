#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup is called from a trap
# GET and SET -P 16 over TLS, shoal-server vs redis-server in the same run (interleaved, REPEATS
# times each; issue 20's benchmark). The script makes its own CA and server/client certificates
# (openssl, EC P-256) and starts each server fresh with
#   --tls-port T --tls-cert-file ... --tls-ca-cert-file ... --tls-auth-clients yes --save ""
# then times, against the TLS port,
#   redis-benchmark --tls --cert --key --cacert -t set|get -P 16 -r 1000000 -n $TLS_REQUESTS -d 100 -c $TLS_CLIENTS --csv
# It reports the median rps, p99 and the server's CPU per request (on-CPU time of all its threads
# from /proc/<pid>/task/*/schedstat), per command.
#
#   scripts/bench-tls.sh
#   REPEATS=1 TLS_REQUESTS=200000 scripts/bench-tls.sh   # quick look
#
# Environment: SHOAL_SERVER (default <repo>/bin/shoal-server, built if missing), REDIS_BASELINE
# (default redis-server), REPEATS (3), TLS_REQUESTS (500000), TLS_CLIENTS (50), TLS_ROWS (also
# write "metric|case|redis|shoal|better" rows there). Only the servers it starts are signalled,
# by PID, on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-tls %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in redis-cli redis-benchmark timeout openssl; do command -v "$t" >/dev/null || die "$t not found"; done
redis-benchmark --help 2>&1 | grep -q -- --tls || die "redis-benchmark is built without TLS"
REPEATS=${REPEATS:-3}
REQUESTS=${TLS_REQUESTS:-500000}
CLIENTS=${TLS_CLIENTS:-50}
KEYSPACE=1000000
VALUE_SIZE=100
WORK=$(mktemp -d /tmp/shoal-bench-tls.XXXXXX)

PID=""
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
bench_binaries

# The test PKI: a CA, and one certificate for 127.0.0.1 used by servers and redis-benchmark.
CERTS=$WORK/certs
mkdir -p "$CERTS"
(
  cd "$CERTS"
  openssl ecparam -name prime256v1 -genkey -noout -out ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 1 -subj "/CN=shoal bench CA" -out ca.crt
  openssl ecparam -name prime256v1 -genkey -noout -out node.key
  openssl req -new -key node.key -subj "/CN=127.0.0.1" -out node.csr
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >ext.cnf
  openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -sha256 -extfile ext.cnf -out node.crt
) >/dev/null 2>&1 || die "openssl could not make the certificates"
TLS_SERVER=(--tls-cert-file "$CERTS/node.crt" --tls-key-file "$CERTS/node.key" --tls-ca-cert-file "$CERTS/ca.crt"
  --tls-auth-clients yes)
TLS_CLIENT=(--tls --cert "$CERTS/node.crt" --key "$CERTS/node.key" --cacert "$CERTS/ca.crt")

# start BIN PORT TLSPORT DIR: the server in the foreground, PID set; 1 when it does not answer PING.
start() {
  local bin=$1 port=$2 tport=$3 dir=$4 i
  mkdir -p "$dir"
  "$bin" --port "$port" --tls-port "$tport" "${TLS_SERVER[@]}" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$dir" --daemonize no --logfile "" >"$dir/log" 2>&1 &
  PID=$!
  for ((i = 0; i < 200; i++)); do
    [[ $(timeout 10 redis-cli "${TLS_CLIENT[@]}" -h 127.0.0.1 -p "$tport" ping 2>/dev/null) == PONG ]] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  log "$bin on TLS port $tport did not answer PING: $(tail -n 3 "$dir/log")"
  stop_server
  return 1
}

# bench WHO TPORT CMD: one measured redis-benchmark of CMD; appends "rps p99 srv_us/r" to $WORK/WHO-CMD.runs
bench() {
  local who=$1 tport=$2 cmd=$3 c0 c1 csv
  c0=$(cpu_ns "$PID")
  csv=$(timeout 600 redis-benchmark "${TLS_CLIENT[@]}" -h 127.0.0.1 -p "$tport" -t "$cmd" -P 16 -r "$KEYSPACE" \
    -n "$REQUESTS" -d "$VALUE_SIZE" -c "$CLIENTS" --csv 2>/dev/null) || { log "$who: redis-benchmark $cmd failed"; return 1; }
  c1=$(cpu_ns "$PID")
  awk -F'"?,"?' -v c0="$c0" -v c1="$c1" -v n="$REQUESTS" -v want="${cmd^^}" '
    { gsub(/^"|"$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == want { printf "%s %s %.3f\n", $col["rps"], $col["p99_latency_ms"], (c1 - c0) / 1000 / n }' \
    <<<"$csv" >>"$WORK/$who-$cmd.runs"
  log "$who $cmd: $(tail -n 1 "$WORK/$who-$cmd.runs") (rps p99_ms srv_us/r)"
}

# run_once WHO BIN: a fresh server, SET then GET (the GETs find the SETs' keys).
run_once() {
  local who=$1 bin=$2 port tport
  port=$(free_port) || die "no free port"
  tport=$(free_port) || die "no free port"
  [[ $port != "$tport" ]] || return 1
  start "$bin" "$port" "$tport" "$WORK/$who-$port" || return 1
  bench "$who" "$tport" set && bench "$who" "$tport" get
  local rc=$?
  stop_server
  return $rc
}

for ((r = 1; r <= REPEATS; r++)); do
  for who in redis shoal; do
    bin=$REDIS
    [[ $who == shoal ]] && bin=$SHOAL
    log "run $r/$REPEATS $who"
    run_once "$who" "$bin" || log "WARNING: $who run $r failed"
  done
done

figure() { run_median "$@"; }
rows=$(
  for cmd in set get; do
    case="${cmd^^} P16 c=$CLIENTS n=$REQUESTS d=$VALUE_SIZE over TLS"
    for spec in "rps 1 higher" "p99_ms 2 lower" "srv_us/r 3 lower"; do
      read -r metric colno better <<<"$spec"
      echo "$metric|$case|$(figure "redis-$cmd" "$colno")|$(figure "shoal-$cmd" "$colno")|$better"
    done
  done
)
[[ -n ${TLS_ROWS:-} ]] && printf '%s\n' "$rows" >"$TLS_ROWS"

rows_table <<<"$rows"
echo
echo "Medians of REPEATS=$REPEATS runs, redis and shoal interleaved, each a fresh server, TLS with client certificates."
echo "srv_us/r = server on-CPU µs per request (schedstat, all threads)."
