# shellcheck shell=bash
# Helpers shared by the bench scripts (sourced, not run).

# free_port prints a loopback port nobody listens on, below the ephemeral range.
free_port() {
  local i p
  for ((i = 0; i < 100; i++)); do
    p=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768-)
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}
# cli PORT ARGS... runs redis-cli against 127.0.0.1:PORT, bounded in time.
cli() { local port=$1; shift; timeout 10 redis-cli -h 127.0.0.1 -p "$port" "$@"; }
# info_field PORT SECTION FIELD prints one INFO field.
info_field() { cli "$1" info "$2" | tr -d '\r' | awk -F: -v f="$3" '$1 == f { print $2 }'; }
# cpu_ns PID prints the on-CPU nanoseconds of all the process's threads.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
# children_cpu_ns PID prints the CPU nanoseconds of the process's children it has reaped
# (cutime + cstime of /proc/PID/stat, in clock ticks): redis-server's fork children (BGSAVE,
# BGREWRITEAOF) do there what shoal-server does on its own threads.
children_cpu_ns() {
  local tck
  tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
  # The command name (field 2) may hold spaces: count the fields after its closing ")".
  sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | awk -v tck="$tck" '{printf "%.0f\n", ($14 + $15) * 1e9 / tck}'
}

# median: the median of the numbers on stdin (empty when none).
median() { sort -g | awk '{v[NR] = $1} END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# stop_server: TERM the server the script started ($PID), KILL it after 10 s, and reap it.
stop_server() {
  local i
  [[ -n ${PID:-} ]] || return 0
  kill -TERM "$PID" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=""
}

# bench_binaries sets REDIS (REDIS_BASELINE, default redis-server) and SHOAL (SHOAL_SERVER, which
# must be an executable, default <repo>/bin/shoal-server, built when missing). Needs ROOT, log, die.
bench_binaries() {
  REDIS=$(command -v "${REDIS_BASELINE:-redis-server}") || die "redis-server not found"
  if [[ -n ${SHOAL_SERVER:-} ]]; then
    SHOAL=$(command -v "$SHOAL_SERVER") || die "SHOAL_SERVER=$SHOAL_SERVER is not an executable"
    return
  fi
  SHOAL=$ROOT/bin/shoal-server
  if [[ ! -x $SHOAL ]]; then
    log "building $SHOAL"
    (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o bin/shoal-server ./cmd/shoal-server) || die "build failed"
  fi
}

# start_bench_server WHO BIN PORT DIR [ARGS...] starts BIN on 127.0.0.1:PORT without persistence,
# its data and log in DIR, and waits until it answers PING; PID is its pid. Returns 1 (PID empty)
# when it exits first.
start_bench_server() {
  local who=$1 bin=$2 port=$3 dir=$4 i
  shift 4
  mkdir -p "$dir"
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no \
    --logfile "" "$@" >"$dir/log" 2>&1 &
  PID=$!
  for ((i = 0; i < 200; i++)); do
    [[ $(cli "$port" ping 2>/dev/null) == PONG ]] && return 0
    kill -0 "$PID" 2>/dev/null || { log "$who exited: $(tail -n 3 "$dir/log")"; PID=""; return 1; }
    sleep 0.05
  done
  return 0
}

# run_median NAME COLUMN prints the median of COLUMN over the lines of $WORK/NAME.runs (nothing
# when there is no run).
run_median() { [[ -s $WORK/$1.runs ]] && awk -v c="$2" '{print $c}' "$WORK/$1.runs" | median; return 0; }

# rows_table prints the rows on stdin ("metric|case|redis|shoal|better") as a markdown table with
# the shoal/redis ratio (n/a unless both are positive numbers).
rows_table() {
  echo "| metric | case | redis | shoal | shoal/redis | better |"
  echo "|---|---|---:|---:|---:|---|"
  awk -F'|' '
    function num(x) { return x ~ /^[0-9.]+$/ && x + 0 > 0 }
    { printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, ($3 == "" ? "-" : $3), ($4 == "" ? "-" : $4),
        (num($3) && num($4) ? sprintf("%.2f", $4 / $3) : "n/a"), $5 }'
}

# ratio_table CASE SPEC... prints rows_table's table of the medians of $WORK/redis.runs and
# $WORK/shoal.runs; a SPEC is "metric column better", e.g. "rps 1 higher".
ratio_table() {
  local case=$1 spec metric colno better
  shift
  for spec in "$@"; do
    read -r metric colno better <<<"$spec"
    echo "$metric|$case|$(run_median redis "$colno")|$(run_median shoal "$colno")|$better"
  done | rows_table
}
