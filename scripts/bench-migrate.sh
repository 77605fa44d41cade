#!/usr/bin/env bash
# Slot migration benchmark (issue 8): moving 1000 slots holding 1,000,000
# keys plus one 1M-field hash between two masters of a 3-master cluster on
# 127.0.0.1, with `redis-cli --cluster reshard` between redis-server nodes,
# the same between shoal-server nodes, and shoal's atomic slot migration
# (CLUSTER MIGRATESLOTS); seconds and the p99 of the writes made during the
# move. Every process it starts is its own and is killed by PID when done.
#
#   scripts/bench-migrate.sh                            (make bench runs it)
#   KEYS=100000 HASH=100000 scripts/bench-migrate.sh    a quicker run
#   MODES=shoal-atomic scripts/bench-migrate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SHOAL_SERVER=${SHOAL_SERVER:-bin/shoal-server}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}
REDIS_CLI=${REDIS_CLI:-$(command -v redis-cli || echo /usr/bin/redis-cli)}
KEYS=${KEYS:-1000000}
HASH=${HASH:-1000000}
SLOTS=${SLOTS:-1000}
MODES=${MODES:-redis-reshard,shoal-reshard,shoal-atomic}
PIPELINE=${PIPELINE:-10}
OUT=${OUT:-bench-results/migrate.md}

if [ ! -x "$SHOAL_SERVER" ]; then
	echo "bench-migrate: $SHOAL_SERVER is missing (make build)" >&2
	exit 1
fi
mkdir -p "$(dirname "$OUT")"
go run ./scripts/benchmigrate -shoal "$SHOAL_SERVER" -redis "$REDIS_SERVER" -cli "$REDIS_CLI" \
	-keys "$KEYS" -hash "$HASH" -slots "$SLOTS" -modes "$MODES" -cluster-pipeline "$PIPELINE" -out "$OUT"
echo "bench-migrate: report written to $OUT"
