#!/usr/bin/env bash
# Installs Docker Compose v2 (the `docker compose` CLI plugin) when the docker client lacks it.
#
# Debian 12 packages only compose v1 (`docker-compose`); its docker.io has no compose plugin, and
# Docker's own apt repository is out of reach on a machine limited to Debian's mirror and the Go
# module proxy. Compose v2 is a Go program, so this builds the released module from the proxy
# (its own go.mod, with its replace and exclude lines, as the main module, which `go install
# pkg@version` refuses) and installs the binary where the docker client looks for plugins.
#
#   scripts/install-compose-plugin.sh            # no-op when `docker compose version` works
#
# Environment: COMPOSE_VERSION (v2.40.3), PLUGIN_DIR (/usr/local/lib/docker/cli-plugins, one of
# the client's system plugin directories). Needs go and a few minutes of CPU on a first build
# (the module cache makes a rebuild quick).
set -euo pipefail

COMPOSE_VERSION=${COMPOSE_VERSION:-v2.40.3}
PLUGIN_DIR=${PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}
log() { printf '[compose-plugin %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v docker >/dev/null || { log "no docker client: nothing to plug into"; exit 1; }
if docker compose version >/dev/null 2>&1; then
  log "already installed: $(docker compose version)"
  exit 0
fi
command -v go >/dev/null || { log "go not found"; exit 1; }

mod=github.com/docker/compose/v2@$COMPOSE_VERSION
log "downloading $mod from the module proxy"
dir=$(go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $dir && -f $dir/go.mod ]] || { log "go mod download $mod gave no source directory"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
log "building $mod (a first build takes a few minutes)"
(cd "$work/src" && CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
  -o "$work/docker-compose" ./cmd)

mkdir -p "$PLUGIN_DIR"
install -m 0755 "$work/docker-compose" "$PLUGIN_DIR/docker-compose"
docker compose version >/dev/null 2>&1 || { log "installed $PLUGIN_DIR/docker-compose, but docker compose does not answer"; exit 1; }
log "installed: $(docker compose version)"
