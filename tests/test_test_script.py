"""`just test` (scripts/test.sh): the whole suite as three pytest processes at once (lanes), the
fault tests in a side lane beside the rest; any lane failing fails the run, and every side lane's
output is shown.

The script runs in a copy where `uv` is a stub, first on PATH, that writes down each pytest it
was asked to run and exits with the status the case gives its lane.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(60)

STUB = """#!/bin/sh
echo "$*" >> "{ran}"
case "$*" in
  *--ignore=tests/faults*) echo "main lane output"; exit "${{MAIN_EXIT:-0}}" ;;
  *" tests/faults "*) echo "fault lane output"; exit "${{SIDE_EXIT:-0}}" ;;
  *" tests/ui "*) echo "ui lane output"; exit "${{UI_EXIT:-0}}" ;;
  *) echo "plain run"; exit "${{PLAIN_EXIT:-0}}" ;;
esac
"""


def run_tests(
    tmp_path: Path, *args: str, **exits: int
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    copy = tmp_path / "checkout"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test.sh", copy / "scripts")
    ran = tmp_path / "ran"
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "uv").write_text(STUB.format(ran=ran))
    (shims / "uv").chmod(0o755)
    env = {name: value for name, value in os.environ.items() if name != "LGOS_TEST_LANES"}
    env["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
    env.update({name: str(status) for name, status in exits.items()})
    result = subprocess.run(
        ["bash", str(copy / "scripts" / "test.sh"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
    )
    lines = ran.read_text().splitlines() if ran.exists() else []
    return result, sorted(lines)


def test_the_whole_suite_runs_as_three_lanes_that_together_cover_every_test(
    tmp_path: Path,
) -> None:
    result, ran = run_tests(tmp_path, "-q", "--durations=20")
    assert result.returncode == 0, result.stderr
    assert len(ran) == 3
    options = "run pytest -q --durations=20 "
    assert all(line.startswith(options) for line in ran)
    main = [line for line in ran if "--ignore=" in line]
    assert len(main) == 1
    ignored = main[0].removeprefix(options).split()
    sides = [line.removeprefix(options).split() for line in ran if line not in main]
    # Each folder a side lane runs is left out of the main lane, and nothing else is: every test
    # runs in exactly one lane.
    assert sorted(ignored) == sorted(f"--ignore={path}" for side in sides for path in side)
    assert ["tests/faults"] in [side[:1] for side in sides]
    # The side lanes' output comes after the main lane's, each whole.
    output = result.stdout
    assert output.index("main lane output") < output.index("fault lane output")
    assert output.index("main lane output") < output.index("ui lane output")


@pytest.mark.parametrize(
    ("exits", "named"),
    [
        ({"SIDE_EXIT": 1}, "side lane tests/faults tests/background: exit 1"),
        ({"UI_EXIT": 1}, "side lane tests/ui tests/webhooks tests/security: exit 1"),
        ({"MAIN_EXIT": 2}, "main lane: exit 2"),
    ],
)
def test_any_lane_failing_fails_the_run(tmp_path: Path, exits: dict[str, int], named: str) -> None:
    result, _ = run_tests(tmp_path, "-q", **exits)
    assert result.returncode == 1
    assert named in result.stderr
    assert "fault lane output" in result.stdout
    assert "ui lane output" in result.stdout


def test_a_lane_with_nothing_selected_is_not_a_failure_unless_all_are(tmp_path: Path) -> None:
    result, _ = run_tests(tmp_path, "-k", "outage", MAIN_EXIT=5, UI_EXIT=5)
    assert result.returncode == 0, result.stderr
    result, _ = run_tests(tmp_path / "two", "-k", "x", MAIN_EXIT=5, UI_EXIT=5, SIDE_EXIT=1)
    assert result.returncode == 1
    result, _ = run_tests(tmp_path / "all", "-k", "nothing", MAIN_EXIT=5, SIDE_EXIT=5, UI_EXIT=5)
    assert result.returncode == 5
    assert "no test matched" in result.stderr


@pytest.mark.parametrize(
    "args",
    [("tests/contract",), ("-x", "tests/faults/test_wake_guard.py"), ("tests/x.py::test_y",)],
)
def test_naming_tests_runs_one_pytest_as_asked(tmp_path: Path, args: tuple[str, ...]) -> None:
    result, ran = run_tests(tmp_path, *args, PLAIN_EXIT=3)
    assert result.returncode == 3
    assert ran == ["run pytest " + " ".join(args)]


def test_one_lane_when_asked(tmp_path: Path) -> None:
    result, ran = run_tests(tmp_path, "-q", LGOS_TEST_LANES=1)
    assert result.returncode == 0
    assert ran == ["run pytest -q"]
