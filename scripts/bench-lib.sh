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
