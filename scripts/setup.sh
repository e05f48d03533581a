#!/usr/bin/env bash
# `just setup`: everything the whole test suite uses, installed once (each step is idempotent, so a
# second run only checks and takes seconds).
#
# The Hatchet engine's Go build (scripts/setup-hatchet.sh) is the long step of a cold setup (several
# minutes, mostly CPU) and needs nothing the other steps install, so it starts first, in the
# background, while PostgreSQL, the Python environment, the browser and UI environments and the
# docs' assets are set up. Its output goes to .cache/setup-hatchet.log and is printed at the end,
# each line prefixed with `hatchet build |`.
#
# The build runs in a process group of its own (setsid), so that everything it started (go and its
# compilers) can be stopped together: when a step here fails, or setup is interrupted, the build is
# stopped and setup fails with that step's error. When the build itself fails, setup fails after
# the other steps and shows the build's log.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p .cache
build_log=.cache/setup-hatchet.log
build_pid=""

show_build_log() {
    if [ -s "$build_log" ]; then
        sed 's/^/hatchet build | /' "$build_log"
    fi
}

stop_build() {
    local status=$?
    if [ -n "$build_pid" ] && kill -0 "$build_pid" 2>/dev/null; then
        echo "setup: a step failed; stopping the Hatchet build (process group $build_pid)" >&2
        kill -TERM -- "-$build_pid" 2>/dev/null || true
        wait "$build_pid" 2>/dev/null || true
        show_build_log >&2
    fi
    exit "$status"
}
trap stop_build EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The background job of a script is never a process group leader, so setsid makes the new session
# in place (no fork): $! is the build's pid, and the id of its process group.
setsid bash scripts/setup-hatchet.sh >"$build_log" 2>&1 </dev/null &
build_pid=$!

bash scripts/setup-postgres.sh
uv sync --all-extras --all-groups --quiet
bash scripts/setup-test-env.sh
bash scripts/docs-assets.sh

build_status=0
wait "$build_pid" || build_status=$?
build_pid=""
show_build_log
if [ "$build_status" -ne 0 ]; then
    echo "setup: the Hatchet build failed (exit $build_status); its log is above and in $build_log" >&2
    exit "$build_status"
fi
