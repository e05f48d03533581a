#!/usr/bin/env bash
# Makes sure a Docker engine answers for the compose tests (tests/compose, `just demo/test-compose`).
#
# - An engine that already answers (DOCKER_HOST, or the default socket) is used as it is.
# - Otherwise, on a Debian-like machine as root, installs Debian's docker.io and starts dockerd
#   with a data root and a socket of the project's own (.cache/docker/, git-ignored; docs/deployment/
#   compose.md says how to remove it). The daemon gets no default bridge and leaves iptables alone
#   (--iptables=false --bridge=none): compose's own project networks still work, and nothing of the
#   machine's networking changes. Builds then need host networking (the harness's override file).
# - Elsewhere (no root, no apt) it says why and succeeds: the engine tests then skip with that reason.
#
# Idempotent: a second run finds the engine answering and does nothing. Stop the project's daemon
# with `kill "$(cat .cache/docker/dockerd.pid)"`.
set -euo pipefail
cd "$(dirname "$0")/.."

answers() { timeout 20 docker "$@" info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then
    exit 0
fi

mkdir -p .cache/docker
state=$(cd .cache/docker && pwd -P)
socket="$state/docker.sock"
if command -v docker >/dev/null 2>&1 && answers -H "unix://$socket"; then
    exit 0
fi

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-docker: no Docker engine answers, and installing one needs root on a Debian-like" \
        "machine; start your engine (or set DOCKER_HOST) for the compose tests"
    exit 0
fi

# debootstrap too: where no image registry answers, the stand-in images start from a Debian base
# made with it (tests/compose/images.py).
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    echo "setup-docker: installing Debian's docker.io and debootstrap (first time only)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq docker.io debootstrap >/dev/null \
        || { apt-get update -qq && apt-get install -y -qq docker.io debootstrap >/dev/null; }
fi

echo "setup-docker: starting dockerd (data in .cache/docker, socket .cache/docker/docker.sock)"
# A short exec root: containerd's sockets live there and a unix socket path has a length limit.
exec_root="/run/lgos-docker-$(printf '%s' "$state" | sha256sum | cut -c1-8)"
setsid dockerd \
    --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
    --data-root "$state/data" --exec-root "$exec_root" \
    -H "unix://$socket" -p "$state/dockerd.pid" \
    >"$state/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 60); do
    if answers -H "unix://$socket"; then
        echo "setup-docker: engine ready (DOCKER_HOST=unix://.cache/docker/docker.sock)"
        exit 0
    fi
    sleep 1
done
echo "setup-docker: dockerd did not answer within 60 s; its log:" >&2
tail -n 40 "$state/dockerd.log" >&2
exit 1
