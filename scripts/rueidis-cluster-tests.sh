#!/usr/bin/env bash
# rueidis's own cluster integration tests (TestClusterClientIntegration and its pooled twin:
# client-side caching, MULTI/EXEC, blocking commands, Pub/Sub, sharded Pub/Sub, Lua) against a
# 3-master cluster on 127.0.0.1:7001-7003, the addresses the tests name. rueidis is a RESP3 client
# whose defaults turn client-side caching on (CLIENT TRACKING). A local compatibility check, not
# part of make test: the tests take minutes and need those fixed ports.
#
#   scripts/rueidis-cluster-tests.sh                          # against bin/shoal-server
#   SHOAL_SERVER=/usr/bin/redis-server scripts/rueidis-cluster-tests.sh   # the same against Redis
#
# The module's source comes from the Go module cache (the version go.mod names), copied to a
# temporary directory; nothing is written into the project.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER=${SHOAL_SERVER:-$ROOT/bin/shoal-server}
[[ -x $SERVER ]] || make -C "$ROOT" build >/dev/null
cd "$ROOT"
VERSION=$(go list -m -f '{{.Version}}' github.com/redis/rueidis)
SRC=$(go list -m -f '{{.Dir}}' github.com/redis/rueidis)
[[ -d $SRC ]] || { go mod download github.com/redis/rueidis; SRC=$(go list -m -f '{{.Dir}}' github.com/redis/rueidis); }
WORK=$(mktemp -d /tmp/rueidis-tests.XXXXXX)
cleanup() {
  for p in 7001 7002 7003; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
for p in 7001 7002 7003; do
  if redis-cli -p "$p" ping >/dev/null 2>&1; then echo "port $p is in use" >&2; exit 2; fi
done
cp -r "$SRC" "$WORK/rueidis" && chmod -R u+w "$WORK/rueidis"
for p in 7001 7002 7003; do
  mkdir -p "$WORK/$p"
  "$SERVER" --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$WORK/$p/nodes.conf" \
    --save '' --appendonly no --dir "$WORK/$p" --logfile "$WORK/$p/log" --daemonize yes
done
for p in 7001 7002 7003; do
  for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create 127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003 --cluster-yes >/dev/null
for _ in $(seq 150); do
  ok=1
  for p in 7001 7002 7003; do redis-cli -p "$p" cluster info | grep -q cluster_state:ok || ok=0; done
  ((ok)) && break
  sleep 0.2
done
echo "rueidis $VERSION against $($SERVER --version | head -1)"
(cd "$WORK/rueidis" && go test -count=1 -timeout 20m -run '^TestClusterClientIntegration(WithPool)?$' -v . 2>&1 |
  grep -E '^(=== RUN|--- |PASS|FAIL|ok)' )
