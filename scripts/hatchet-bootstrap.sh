#!/usr/bin/env bash
# The one Hatchet bootstrap of LGOS, run by compose.yaml (in the hatchet-lite image) and by the
# local stack (`just demo/hatchet-up`, the test suite) with the same steps and flags:
#
#   engine   migrate the engine's database, generate its config (`hatchet-admin quickstart`,
#            no certificates: gRPC runs without TLS), then become `hatchet-lite`
#   token    wait until the engine answers, mint a client token for the default tenant and
#            write the client settings where the API and the worker read them
#   up       (local) `engine` in the background, then `token`; prints the UI/API address
#   down     (local) stop what `up` started
#
# Settings (the engine reads its own SERVER_*, LITE_* and DATABASE_* variables; the token step
# needs the same ones, DATABASE_URL included, because `hatchet-admin token create` loads the
# engine's configuration and writes the token into its database):
#   DATABASE_URL              the engine's PostgreSQL database (required)
#   HATCHET_BIN_DIR           folder holding hatchet-lite, hatchet-admin and hatchet-migrate
#   HATCHET_STATE_DIR         generated config, pid and log of a local engine (default .cache/hatchet/state)
#   HATCHET_CONFIG_DIR        generated config (default $HATCHET_STATE_DIR/config)
#   HATCHET_CLIENT_SETTINGS   file the client settings go to (default $HATCHET_STATE_DIR/client.env)
#   HATCHET_ENGINE_HOST       where the token step reaches the engine (default 127.0.0.1)
#   HATCHET_CLIENT_HOST_PORT, HATCHET_CLIENT_SERVER_URL   what clients dial (defaults: the engine's
#                             broadcast address and SERVER_URL)
#   HATCHET_READY_TIMEOUT     seconds to wait for the engine (default 180)
# Errors are printed as they happen; nothing is hidden.
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)

fail() {
    echo "hatchet-bootstrap: $*" >&2
    exit 1
}

say() {
    echo "hatchet-bootstrap: $*"
}

default_bin_dir() {
    # The local build of scripts/setup-hatchet.sh (its pinned version).
    local version
    version=$(sed -n 's/^HATCHET_VERSION="\${HATCHET_VERSION:-\(v[0-9.]*\)}"$/\1/p' \
        "$repo_root/scripts/setup-hatchet.sh")
    echo "$repo_root/.cache/hatchet/${HATCHET_VERSION:-$version}/bin"
}

state_dir=${HATCHET_STATE_DIR:-$repo_root/.cache/hatchet/state}
bin_dir=${HATCHET_BIN_DIR:-$(default_bin_dir)}
config_dir=${HATCHET_CONFIG_DIR:-$state_dir/config}
settings_file=${HATCHET_CLIENT_SETTINGS:-$state_dir/client.env}
engine_host=${HATCHET_ENGINE_HOST:-127.0.0.1}
ready_timeout=${HATCHET_READY_TIMEOUT:-180}

# The engine's own variables, with the defaults of the hatchet-lite image (and of compose).
export SERVER_PORT=${SERVER_PORT:-8080}
export SERVER_GRPC_PORT=${SERVER_GRPC_PORT:-7077}
export SERVER_GRPC_INSECURE=${SERVER_GRPC_INSECURE:-t}
export SERVER_GRPC_BROADCAST_ADDRESS=${SERVER_GRPC_BROADCAST_ADDRESS:-127.0.0.1:$SERVER_GRPC_PORT}
export SERVER_INTERNAL_CLIENT_INTERNAL_GRPC_BROADCAST_ADDRESS=${SERVER_INTERNAL_CLIENT_INTERNAL_GRPC_BROADCAST_ADDRESS:-$SERVER_GRPC_BROADCAST_ADDRESS}
export SERVER_HEALTHCHECK_PORT=${SERVER_HEALTHCHECK_PORT:-8733}
export SERVER_DEFAULT_ENGINE_VERSION=${SERVER_DEFAULT_ENGINE_VERSION:-V1}
export LITE_RUNTIME_PORT=${LITE_RUNTIME_PORT:-8888}
export LITE_FRONTEND_PORT=${LITE_FRONTEND_PORT:-8081}
export SERVER_URL=${SERVER_URL:-http://localhost:$LITE_RUNTIME_PORT}
# The UI's login cookie over plain HTTP on localhost; the seeded admin needs no e-mail check.
export SERVER_AUTH_COOKIE_DOMAIN=${SERVER_AUTH_COOKIE_DOMAIN:-localhost}
export SERVER_AUTH_COOKIE_INSECURE=${SERVER_AUTH_COOKIE_INSECURE:-t}
export SERVER_AUTH_SET_EMAIL_VERIFIED=${SERVER_AUTH_SET_EMAIL_VERIFIED:-t}

need_database() {
    [ -n "${DATABASE_URL:-}" ] || fail "DATABASE_URL is not set: the engine and hatchet-admin need its database"
}

need_binaries() {
    local command
    for command in hatchet-lite hatchet-admin hatchet-migrate; do
        [ -x "$bin_dir/$command" ] ||
            fail "$bin_dir/$command is missing: run scripts/setup-hatchet.sh (needs Go) or set HATCHET_BIN_DIR"
    done
}

prepare() {
    need_database
    need_binaries
    say "migrating the engine database"
    "$bin_dir/hatchet-migrate" || fail "hatchet-migrate failed (output above)"
    say "generating the engine config in $config_dir"
    mkdir -p "$config_dir"
    # --overwrite=false keeps the keys of an earlier start: tokens minted then stay valid.
    "$bin_dir/hatchet-admin" quickstart --skip certs --generated-config-dir "$config_dir" \
        --overwrite=false || fail "hatchet-admin quickstart failed (output above)"
}

run_engine() {
    prepare
    # hatchet-lite serves its UI from this folder and will not start without an index.html. The
    # image ships the built UI; locally, point LITE_STATIC_ASSET_DIR at a build of the module's
    # frontend/app, or get a page that says how.
    export LITE_STATIC_ASSET_DIR=${LITE_STATIC_ASSET_DIR:-$state_dir/static}
    if [ ! -f "$LITE_STATIC_ASSET_DIR/index.html" ]; then
        mkdir -p "$LITE_STATIC_ASSET_DIR"
        cat > "$LITE_STATIC_ASSET_DIR/index.html" <<'HTML'
<!doctype html>
<title>Hatchet</title>
<p>The Hatchet engine runs, but its web UI is not built on this machine. Build the engine
module's <code>frontend/app</code> (<code>pnpm install &amp;&amp; npm run build</code>), set
LITE_STATIC_ASSET_DIR to its <code>dist</code> folder and restart the engine, or use the
compose stack, whose image ships the UI. The REST API answers under <code>/api</code>.</p>
HTML
    fi
    say "starting hatchet-lite: UI and REST API on port $LITE_RUNTIME_PORT, gRPC on $SERVER_GRPC_PORT"
    exec "$bin_dir/hatchet-lite" --config "$config_dir"
}

# Ready = the REST API (through the lite proxy) and the engine's health endpoint both answer.
engine_ready() {
    curl -fsS -o /dev/null --max-time 5 "http://$engine_host:$LITE_RUNTIME_PORT/api/ready" 2>/dev/null &&
        curl -fsS -o /dev/null --max-time 5 "http://$engine_host:$SERVER_HEALTHCHECK_PORT/ready" 2>/dev/null
}

wait_until_ready() {  # optional: pid of a local engine that must stay alive meanwhile
    local pid=${1:-} deadline=$((SECONDS + ready_timeout))
    say "waiting for the engine at $engine_host (REST :$LITE_RUNTIME_PORT, health :$SERVER_HEALTHCHECK_PORT)"
    until engine_ready; do
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            echo "hatchet-bootstrap: the engine exited while starting; its log ($state_dir/engine.log):" >&2
            tail -n 40 "$state_dir/engine.log" >&2 || true
            exit 1
        fi
        [ "$SECONDS" -lt "$deadline" ] || fail "the engine did not become ready within ${ready_timeout}s"
        sleep 1
    done
}

mint_token() {
    need_database
    need_binaries
    if [ -s "$settings_file" ] && grep -q '^HATCHET_CLIENT_TOKEN=ey' "$settings_file"; then
        # Keep it: API and worker processes already hold it.
        say "client settings already in $settings_file"
        return
    fi
    local output token
    # A year: the demo stack should not stop working after the SDK default of 90 days.
    output=$("$bin_dir/hatchet-admin" token create --config "$config_dir" --name lgos \
        --expiresIn 8760h) || fail "hatchet-admin token create failed: $output"
    # The token is the last line hatchet-admin prints.
    token=$(printf '%s\n' "$output" | tail -n 1 | tr -d '[:space:]')
    case "$token" in
        ey*) ;;
        *) fail "hatchet-admin token create printed no token: $output" ;;
    esac
    mkdir -p "$(dirname "$settings_file")"
    {
        echo "HATCHET_CLIENT_TOKEN=$token"
        echo "HATCHET_CLIENT_HOST_PORT=${HATCHET_CLIENT_HOST_PORT:-$SERVER_GRPC_BROADCAST_ADDRESS}"
        echo "HATCHET_CLIENT_SERVER_URL=${HATCHET_CLIENT_SERVER_URL:-$SERVER_URL}"
        echo "HATCHET_CLIENT_TLS_STRATEGY=none"
    } > "$settings_file.tmp"
    chmod 0644 "$settings_file.tmp"
    mv "$settings_file.tmp" "$settings_file"
    say "client settings written to $settings_file"
}

engine_pid() {
    local pid
    [ -f "$state_dir/engine.pid" ] || return 1
    pid=$(cat "$state_dir/engine.pid")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

up() {
    local pid
    mkdir -p "$state_dir"
    if pid=$(engine_pid); then
        say "the engine is already running (pid $pid)"
    else
        need_database
        need_binaries
        # setsid: the engine leads its own process group, so `down` stops it by that id.
        setsid bash "$0" engine > "$state_dir/engine.log" 2>&1 < /dev/null &
        pid=$!
        echo "$pid" > "$state_dir/engine.pid"
        say "engine started (pid $pid, log $state_dir/engine.log)"
    fi
    # The same step compose's hatchet-token job runs, watching the engine we started.
    HATCHET_ENGINE_PID=$pid bash "$0" token
    echo "Hatchet UI and REST API: http://127.0.0.1:$LITE_RUNTIME_PORT (gRPC 127.0.0.1:$SERVER_GRPC_PORT)"
    echo "Hatchet client settings: $settings_file"
}

down() {
    local pid
    if ! pid=$(engine_pid); then
        rm -f "$state_dir/engine.pid"
        return
    fi
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 120); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL -- "-$pid" 2>/dev/null
    rm -f "$state_dir/engine.pid"
    say "stopped the engine (pid $pid)"
}

case "${1:-}" in
    engine) run_engine ;;
    token)
        wait_until_ready "${HATCHET_ENGINE_PID:-}"
        mint_token
        ;;
    up) up ;;
    down) down ;;
    *) fail "usage: hatchet-bootstrap.sh engine|token|up|down" ;;
esac
