# shellcheck shell=bash
# claim_port_block, shared by tcl-suite.sh and tcl-cluster.sh (sourced, not run): two runs of the
# Redis tcl suite on one machine must not share ports (runtest's fixed --baseport 21111 and its test
# server's 21079-21110 made concurrent runs fail with the reason only inside each unit's log).

# claim_port_block NAME FIRST SIZE COUNT [OFFSET...]
# Picks, in random order, a block k in 0..COUNT-1 of ports [FIRST+SIZE*k, FIRST+SIZE*(k+1)) that
#   - no other run holds: an flock on /tmp/shoal-ports-NAME-k.lock, kept by an open descriptor
#     until this shell exits (so two runs starting at the same instant cannot both pick it), and
#   - where nothing listens on the probed ports: FIRST+SIZE*k+OFFSET for each OFFSET (default 0).
# Sets PORT_BLOCK to the block's first port; returns 1 when every block is taken.
claim_port_block() {
  local name=$1 first=$2 size=$3 count=$4 k off start busy fd
  shift 4
  local offsets=("$@")
  ((${#offsets[@]})) || offsets=(0)
  PORT_BLOCK=""
  for k in $(shuf -i "0-$((count - 1))"); do
    start=$((first + size * k))
    # (the braces: a 2>/dev/null on exec itself would silence the whole script's stderr)
    { exec {fd}>>"/tmp/shoal-ports-$name-$k.lock"; } 2>/dev/null || continue
    if ! flock -n "$fd"; then
      exec {fd}>&-
      continue
    fi
    busy=0
    for off in "${offsets[@]}"; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((start + off))") 2>/dev/null; then busy=1 && break; fi
    done
    if ((busy)); then
      exec {fd}>&-
      continue
    fi
    PORT_BLOCK=$start
    return 0 # the descriptor stays open: the lock lasts as long as this shell
  done
  return 1
}
