#!/usr/bin/env bash
# `just test [pytest options]`: the whole suite, in two pytest processes at once.
#
# The fault tests (tests/faults) spend most of their minutes waiting: for a stopped worker's
# lease to run out, for Hatchet to reassign a frozen worker's runs, for a restarted database. Run
# after the rest, those waits added about 13 minutes to CI; run beside the rest, they overlap it.
# Each lane is a separate pytest with its own services (its own Hatchet engine, its own private
# PostgreSQL clusters, throwaway databases with unique names, free ports), so they share nothing
# but the machine.
#
# The side lane's output is kept in a file and printed when both are done, so the log reads as two
# whole runs. Either lane failing fails the whole. A run that names tests (a path or a node id)
# is one plain pytest run, as asked; LGOS_TEST_LANES=1 makes any run one plain pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."

SIDE_LANE=(tests/faults)

for arg in "$@"; do
    case "$arg" in
    tests | tests/* | ./tests* | *.py | *::*) exec uv run pytest "$@" ;;
    esac
done
if [ "${LGOS_TEST_LANES:-2}" = "1" ]; then
    exec uv run pytest "$@"
fi

side_log=$(mktemp)
side_pid=""
stop_side() {
    if [ -n "$side_pid" ] && kill -0 "$side_pid" 2>/dev/null; then
        kill -INT "$side_pid" 2>/dev/null || true
        wait "$side_pid" 2>/dev/null || true
    fi
    rm -f "$side_log"
}
trap stop_side EXIT

# pytest exits 5 when a lane's selection (say, a -k expression) matches none of its tests: that
# lane had nothing to run, which is a failure only when the other lane had nothing either.
lane_status() {
    if [ "$1" -eq 5 ] && [ "$2" -ne 5 ]; then echo 0; else echo "$1"; fi
}

uv run pytest "$@" "${SIDE_LANE[@]}" >"$side_log" 2>&1 &
side_pid=$!

main_status=0
uv run pytest "$@" "${SIDE_LANE[@]/#/--ignore=}" || main_status=$?

side_status=0
wait "$side_pid" || side_status=$?
side_pid=""
echo "test: the side lane (${SIDE_LANE[*]}), run beside the tests above, printed:"
cat "$side_log"

main=$(lane_status "$main_status" "$side_status")
side=$(lane_status "$side_status" "$main_status")
if [ "$main" -eq 5 ] && [ "$side" -eq 5 ]; then
    echo "test: no test matched in either lane" >&2
    exit 5
fi
if [ "$main" -ne 0 ] || [ "$side" -ne 0 ]; then
    echo "test: failed (main lane: exit $main, side lane ${SIDE_LANE[*]}: exit $side)" >&2
    exit 1
fi
