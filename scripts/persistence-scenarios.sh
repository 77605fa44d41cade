#!/usr/bin/env bash
# The same persistence scenarios against redis-server and shoal-server, with the DEFAULT save
# points (3600 1, 300 100, 60 10000) and 15,000 writes, printing the keys each keeps after a
# restart (issue 14's "must show"):
#
#   a) kill9:    15,000 SETs, wait until the first save point fired (60 s / 10000 changes:
#                rdb_saves >= 1 and the save finished), 1,000 more SETs, kill -9, restart
#   b) sigterm:  15,000 SETs, SIGTERM, restart
#   c) shutdown: 15,000 SETs, SHUTDOWN, restart
#
#   scripts/persistence-scenarios.sh                # both servers, all three scenarios
#   SCENARIOS="sigterm shutdown" scripts/persistence-scenarios.sh
#
# Environment: REDIS_SERVER (default redis-server), SHOAL_SERVER (default <repo>/bin/shoal-server,
# built if missing), BASE_PORT (default 23400), SAVE_WAIT (seconds to wait for the save point,
# default 150). The two servers of a scenario run side by side (the kill9 scenario waits over a
# minute). Only the processes this script starts are signalled, by PID; it uses loopback only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REDIS_SERVER=${REDIS_SERVER:-redis-server}
SHOAL_SERVER=${SHOAL_SERVER:-$ROOT/bin/shoal-server}
BASE_PORT=${BASE_PORT:-23400}
SAVE_WAIT=${SAVE_WAIT:-150}
SCENARIOS=${SCENARIOS:-"kill9 sigterm shutdown"}
WRITES=15000
EXTRA_WRITES=1000

if [[ ! -x $SHOAL_SERVER ]]; then
	(cd "$ROOT" && go build -o bin/shoal-server ./cmd/shoal-server)
fi
WORK=$(mktemp -d /tmp/persistence-scenarios.XXXXXX)
# Every server started is listed in $WORK/pids (starts happen in subshells).
cleanup() {
	[[ -f $WORK/pids ]] || return 0
	while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$WORK/pids"
}
trap cleanup EXIT

# start <name> <binary> <port> <dir>: starts a server (default save points), prints its PID.
start() {
	local name=$1 bin=$2 port=$3 dir=$4
	"$bin" --port "$port" --bind 127.0.0.1 --dir "$dir" --logfile "$dir/server.log" >/dev/null 2>&1 &
	local pid=$!
	echo "$pid" >>"$WORK/pids"
	for _ in $(seq 1 100); do
		if redis-cli -p "$port" ping >/dev/null 2>&1; then
			echo "$pid"
			return
		fi
		sleep 0.1
	done
	echo "$name did not start on $port" >&2
	exit 2
}

# writes <port> <from> <count>: SET key:<i> value-<i> pipelined, RESP.
writes() {
	local port=$1 from=$2 count=$3
	awk -v from="$from" -v n="$count" 'BEGIN {
		for (i = from; i < from + n; i++) {
			k = "key:" i; v = "value-" i
			printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v
		}
	}' | redis-cli -p "$port" --pipe >/dev/null
}

info() { redis-cli -p "$1" info persistence | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }

# wait_gone <pid>: waits (bounded) for a process to exit.
wait_gone() {
	for _ in $(seq 1 300); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "process $1 did not exit" >&2
	return 1
}

# wait_saved <port>: waits until the first background save (a save point) has finished.
wait_saved() {
	local port=$1
	for _ in $(seq 1 $((SAVE_WAIT * 2))); do
		if [[ $(info "$port" rdb_saves) -ge 1 && $(info "$port" rdb_bgsave_in_progress) == 0 ]]; then
			return 0
		fi
		sleep 0.5
	done
	echo "no save point fired on $port within ${SAVE_WAIT}s" >&2
	return 1
}

# run_one <scenario> <name> <binary> <port>: prints "<name> <scenario> kept=<n> ...".
run_one() {
	local scenario=$1 name=$2 bin=$3 port=$4
	local dir=$WORK/$scenario-$name
	mkdir -p "$dir"
	local pid t0 detail=""
	pid=$(start "$name" "$bin" "$port" "$dir")
	t0=$(date +%s)
	writes "$port" 0 "$WRITES"
	case $scenario in
	kill9)
		wait_saved "$port"
		detail="save_point_after=$(($(date +%s) - t0))s changes_at_save=$(info "$port" rdb_changes_since_last_save)"
		writes "$port" "$WRITES" "$EXTRA_WRITES"
		detail="$detail written=$((WRITES + EXTRA_WRITES))"
		kill -9 "$pid"
		;;
	sigterm)
		detail="written=$WRITES"
		kill -TERM "$pid"
		;;
	shutdown)
		detail="written=$WRITES"
		redis-cli -p "$port" shutdown >/dev/null 2>&1 || true
		;;
	esac
	wait_gone "$pid"
	pid=$(start "$name" "$bin" "$port" "$dir")
	local kept
	kept=$(redis-cli -p "$port" dbsize)
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait_gone "$pid"
	echo "$name $scenario kept=$kept $detail"
}

port=$BASE_PORT
for scenario in $SCENARIOS; do
	run_one "$scenario" redis-server "$REDIS_SERVER" "$port" >"$WORK/$scenario-redis.out" &
	r=$!
	run_one "$scenario" shoal-server "$SHOAL_SERVER" $((port + 1)) >"$WORK/$scenario-shoal.out" &
	s=$!
	wait "$r" "$s"
	cat "$WORK/$scenario-redis.out" "$WORK/$scenario-shoal.out"
	port=$((port + 2))
done
echo "logs: $WORK"
