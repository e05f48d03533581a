#!/usr/bin/env bash
# `just test [pytest options]`: the whole suite, in three pytest processes at once (lanes).
#
# Most of the suite's minutes are spent waiting, not computing: for a stopped worker's lease to
# run out, for Hatchet to reassign a frozen worker's runs, for a restarted database, for a UI or
# a browser to start. As two lanes (the fault tests beside the rest) the two cores sat about half
# idle (a whole run sampled every 5 s: 40-70 % busy once the compose images were built); as three,
# the waits of one lane overlap the work of the others. Each lane is a separate pytest with its own
# services (its own Hatchet engine, its own private PostgreSQL clusters, throwaway databases
# with unique names, free ports), so they share nothing but the machine. The side lanes hold
# whole folders, chosen so that the three take about as long (a fresh-clone CI run with the
# first split, in minutes: faults and background 27; ui and webhooks 24; the rest 31, so
# security, about 3, moved to the ui lane); the main lane runs every other folder, so a new
# folder is never left out.
#
# The side lanes' output is kept in files and printed when all are done, so the log reads as
# whole runs, one after the other. Any lane failing fails the whole. A run that names tests (a
# path or a node id) is one plain pytest run, as asked; LGOS_TEST_LANES=1 makes any run one
# plain pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."

SIDE_LANES=(
    "tests/faults tests/background"
    "tests/ui tests/webhooks tests/security"
)

for arg in "$@"; do
    case "$arg" in
    tests | tests/* | ./tests* | *.py | *::*) exec uv run pytest "$@" ;;
    esac
done
if [ "${LGOS_TEST_LANES:-3}" = "1" ]; then
    exec uv run pytest "$@"
fi

side_logs=()
side_pids=()
stop_sides() {
    for pid in "${side_pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -INT "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    rm -f "${side_logs[@]}"
}
trap stop_sides EXIT

ignored=()
for lane in "${SIDE_LANES[@]}"; do
    read -ra paths <<<"$lane"
    ignored+=("${paths[@]/#/--ignore=}")
    log=$(mktemp)
    side_logs+=("$log")
    uv run pytest "$@" "${paths[@]}" >"$log" 2>&1 &
    side_pids+=("$!")
done

statuses=()
main_status=0
uv run pytest "$@" "${ignored[@]}" || main_status=$?
statuses+=("$main_status")

names=("main lane")
for index in "${!SIDE_LANES[@]}"; do
    status=0
    wait "${side_pids[$index]}" || status=$?
    statuses+=("$status")
    names+=("side lane ${SIDE_LANES[$index]}")
    echo "test: the side lane (${SIDE_LANES[$index]}), run beside the tests above, printed:"
    cat "${side_logs[$index]}"
done
side_pids=()

# pytest exits 5 when a lane's selection (say, a -k expression) matches none of its tests: that
# lane had nothing to run, which is a failure only when no lane had anything to run.
failed=""
all_empty=1
for index in "${!statuses[@]}"; do
    status=${statuses[$index]}
    if [ "$status" -ne 5 ]; then all_empty=0; fi
    if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then
        failed+="${failed:+, }${names[$index]}: exit $status"
    fi
done
if [ "$all_empty" -eq 1 ]; then
    echo "test: no test matched in any lane" >&2
    exit 5
fi
if [ -n "$failed" ]; then
    echo "test: failed ($failed)" >&2
    exit 1
fi
