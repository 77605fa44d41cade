#!/usr/bin/env bash
# A local shoal cluster on 127.0.0.1: 3 masters + 3 replicas by default, created with the
# unmodified `redis-cli --cluster create` (what `make cluster` runs).
#
#   scripts/cluster.sh [start]   start the nodes, create the cluster, wait for cluster_state:ok
#   scripts/cluster.sh stop      stop the nodes this script started (and only those)
#   scripts/cluster.sh status    CLUSTER INFO state and role of each node
#
# Each node runs in the background with its own directory $CLUSTER_DIR/<port> (nodes.conf,
# server.log) and `--cluster-enabled yes --cluster-config-file nodes.conf
# --cluster-node-timeout 5000`; the bus listens on port+10000. `start` always creates a fresh
# cluster (it removes the nodes.conf files of an earlier run in the same directory).
#
# Environment: CLUSTER_BASE_PORT (7000), CLUSTER_NODES (6), CLUSTER_REPLICAS (1),
# CLUSTER_DIR (/tmp/shoal-cluster-<base port>), CLUSTER_TIMEOUT (60 s for the create step and
# for the wait for cluster_state:ok), SHOAL_SERVER (default <repo>/bin/shoal-server, built if
# missing; /usr/bin/redis-server works too), REDIS_CLI (redis-cli), CLUSTER_EXTRA (more server
# arguments, e.g. "--requirepass x").
#
# Safety: the PIDs started here are recorded with their kernel start times in
# $CLUSTER_DIR/pids; `stop` signals a PID only if that process is still the one started here.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=${CLUSTER_BASE_PORT:-7000}
NODES=${CLUSTER_NODES:-6}
REPLICAS=${CLUSTER_REPLICAS:-1}
DIR=${CLUSTER_DIR:-/tmp/shoal-cluster-$BASE}
TIMEOUT=${CLUSTER_TIMEOUT:-60}
REDIS_CLI=${REDIS_CLI:-redis-cli}
read -r -a EXTRA <<<"${CLUSTER_EXTRA:-}"
PIDS=$DIR/pids

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

[[ $BASE =~ ^[0-9]+$ && $NODES =~ ^[0-9]+$ && $REPLICAS =~ ^[0-9]+$ && $TIMEOUT =~ ^[0-9]+$ ]] ||
  die "CLUSTER_BASE_PORT, CLUSTER_NODES, CLUSTER_REPLICAS and CLUSTER_TIMEOUT must be numbers"
((BASE >= 1 && BASE + NODES - 1 + 10000 <= 65535)) || die "ports $BASE.. and their bus ports (+10000) must fit in 1..65535"
((NODES >= 3 * (REPLICAS + 1))) || die "$NODES nodes cannot make 3 masters with $REPLICAS replicas each"

# proc_starttime PID: field 22 of /proc/PID/stat (after the parenthesised command name).
proc_starttime() { sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }
pid_alive() {
  local st
  st=$(sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | awk '{print $1}') || return 1
  [[ -n $st && $st != Z ]]
}

# our_pids prints "pid port" for each recorded process that is still the one we started.
our_pids() {
  [[ -f $PIDS ]] || return 0
  local pid start port
  while read -r pid start port; do
    [[ -n $pid ]] || continue
    if pid_alive "$pid" && [[ $(proc_starttime "$pid") == "$start" ]]; then
      echo "$pid $port"
    fi
  done <"$PIDS"
}

stop_nodes() {
  local pid port i left
  local -a mine=()
  while read -r pid port; do
    [[ -n $pid ]] || continue
    mine+=("$pid")
    kill -TERM "$pid" 2>/dev/null || true
    log "stopping node $port (pid $pid)"
  done < <(our_pids)
  for ((i = 0; i < 100; i++)); do
    left=0
    for pid in "${mine[@]}"; do pid_alive "$pid" && left=1; done
    ((left == 0)) && break
    sleep 0.05
  done
  # Whatever is still running after 5 s is killed, after checking again that it is ours.
  while read -r pid port; do
    [[ -n $pid ]] || continue
    log "node $port (pid $pid) ignored SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  done < <(our_pids)
  rm -f "$PIDS"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

server_binary() {
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
}

cli() { timeout 5 "$REDIS_CLI" -h 127.0.0.1 "$@"; }

start() {
  command -v "$REDIS_CLI" >/dev/null || die "$REDIS_CLI not found (apt-get install -y redis-tools)"
  server_binary
  mkdir -p "$DIR"
  [[ -z $(our_pids) ]] || die "a cluster started by this script is still running in $DIR (scripts/cluster.sh stop)"
  local i port
  for ((i = 0; i < NODES; i++)); do
    port=$((BASE + i))
    ! port_in_use "$port" || die "port $port is in use"
    ! port_in_use $((port + 10000)) || die "bus port $((port + 10000)) is in use"
  done
  : >"$PIDS"
  # Until the cluster is up, any failure (die, set -e, ^C) stops what was started.
  STARTED=0
  trap 'if ((STARTED == 0)); then log "start failed; stopping the nodes started so far"; stop_nodes; fi' EXIT
  trap 'exit 130' INT TERM

  local addrs=()
  for ((i = 0; i < NODES; i++)); do
    port=$((BASE + i))
    mkdir -p "$DIR/$port"
    rm -f "$DIR/$port/nodes.conf"
    # setsid: the nodes outlive this shell and its terminal's signals.
    setsid "$SERVER" --port "$port" --bind 127.0.0.1 --dir "$DIR/$port" --daemonize no \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --save '' --appendonly no "${EXTRA[@]}" </dev/null >"$DIR/$port/server.log" 2>&1 &
    # Recorded at once: /proc/PID exists until this shell reaps the child.
    local pid=$! st
    st=$(proc_starttime "$pid")
    echo "$pid $st $port" >>"$PIDS"
    pid_alive "$pid" || die "node $port (pid $pid) exited at once: $(tail -5 "$DIR/$port/server.log")"
    addrs+=("127.0.0.1:$port")
  done
  for ((i = 0; i < NODES; i++)); do
    port=$((BASE + i))
    local ok=0 t
    for ((t = 0; t < 200; t++)); do
      if [[ $(cli -p "$port" PING 2>/dev/null) == PONG ]]; then ok=1; break; fi
      sleep 0.05
    done
    ((ok)) || die "node $port did not answer PING within 10 s: $(tail -5 "$DIR/$port/server.log")"
  done
  log "${NODES} nodes up on ${BASE}-$((BASE + NODES - 1)) ($SERVER); creating the cluster"

  timeout "$TIMEOUT" "$REDIS_CLI" --cluster create "${addrs[@]}" --cluster-replicas "$REPLICAS" --cluster-yes \
    >"$DIR/create.log" 2>&1 || die "redis-cli --cluster create failed or took over ${TIMEOUT}s; see $DIR/create.log:
$(tail -20 "$DIR/create.log")"

  # Ready = every node says cluster_state:ok and lists every node, none failing or in
  # handshake, with all the replicas redis-cli configured (REPLICATE spreads by gossip).
  local deadline=$((SECONDS + TIMEOUT)) all nodes
  local want_slaves=$((NODES - NODES / (REPLICAS + 1)))
  while :; do
    all=1
    for ((i = 0; i < NODES; i++)); do
      port=$((BASE + i))
      [[ $(cli -p "$port" CLUSTER INFO 2>/dev/null) == *cluster_state:ok* ]] || { all=0; break; }
      nodes=$(cli -p "$port" CLUSTER NODES 2>/dev/null) || { all=0; break; }
      if [[ $(grep -c . <<<"$nodes") != "$NODES" || $nodes == *handshake* || $nodes == *fail* ||
        $(awk '$3 ~ /(^|,)slave(,|$)/' <<<"$nodes" | grep -c .) != "$want_slaves" ]]; then
        all=0
        break
      fi
    done
    ((all)) && break
    ((SECONDS < deadline)) || die "the cluster did not settle (cluster_state:ok, $NODES nodes, $want_slaves replicas seen everywhere) within ${TIMEOUT}s; logs in $DIR/<port>/server.log"
    sleep 0.2
  done
  # shellcheck disable=SC2034 # read by the EXIT trap above
  STARTED=1
  trap - EXIT INT TERM
  cli -p "$BASE" CLUSTER NODES | sort -k2
  cat <<EOF

Cluster ready: $NODES nodes on 127.0.0.1:${BASE}-$((BASE + NODES - 1)), $REPLICAS replica(s) per master.
  connect:  $REDIS_CLI -c -p $BASE
  check:    $REDIS_CLI --cluster check 127.0.0.1:$BASE
  stop:     scripts/cluster.sh stop$( [[ -n ${CLUSTER_BASE_PORT:-} || -n ${CLUSTER_DIR:-} ]] && echo "   (with the same CLUSTER_BASE_PORT/CLUSTER_DIR)")
  logs:     $DIR/<port>/server.log
EOF
}

status() {
  local i port
  for ((i = 0; i < NODES; i++)); do
    port=$((BASE + i))
    local st flags
    st=$(cli -p "$port" CLUSTER INFO 2>/dev/null | tr -d '\r' | awk -F: '/^cluster_state/ {print $2}') || true
    flags=$(cli -p "$port" CLUSTER NODES 2>/dev/null | awk '$3 ~ /myself/ {print $3}') || true
    printf '%s  state=%s flags=%s\n' "$port" "${st:-down}" "${flags:-?}"
  done
}

case ${1:-start} in
start) start ;;
stop)
  [[ -n $(our_pids) ]] || { log "no running node started by this script in $DIR"; rm -f "$PIDS"; exit 0; }
  stop_nodes
  log "stopped"
  ;;
status) status ;;
*) die "usage: scripts/cluster.sh [start|stop|status]" ;;
esac
