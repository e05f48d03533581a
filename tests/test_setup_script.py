"""`just setup` (scripts/setup.sh): the Hatchet build runs in the background beside the other
steps, its log is shown at the end, its failure fails setup, and a failing step stops it.

The script runs in a copy where every step is a stub that writes down that it ran (and `uv` is
one too, first on PATH); the stubs of each case say when they finish, so nothing here waits on
a clock.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("setup-postgres.sh", "setup-test-env.sh", "docs-assets.sh")

pytestmark = pytest.mark.timeout(180)


def checkout(tmp_path: Path, build: str, postgres: str = "") -> tuple[Path, Path]:
    """A copy with scripts/setup.sh and stubs: `build` is the Hatchet build's body, `postgres`
    what the PostgreSQL step does before it writes down that it ran."""
    copy = tmp_path / "checkout"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", copy / "scripts")
    ran = tmp_path / "ran"
    for step in STEPS:
        body = postgres if step == "setup-postgres.sh" else ""
        (copy / "scripts" / step).write_text(f'{body}\necho {step} >> "{ran}"\n')
    (copy / "scripts" / "setup-hatchet.sh").write_text(build)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "uv").write_text(f'#!/bin/sh\necho "uv $*" >> "{ran}"\n')
    (shims / "uv").chmod(0o755)
    return copy, ran


def setup(copy: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{copy.parent / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", str(copy / "scripts" / "setup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )


def ends(pid: int) -> bool:
    """Whether the process ends (exits) within a minute: a signal sent to it takes effect once
    the kernel runs it, which on a busy machine may be after the sender returned."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([handle], [], [], 60)  # readable once it exited
        return bool(readable)
    finally:
        os.close(handle)


def test_setup_runs_every_step_and_shows_the_builds_log(tmp_path: Path) -> None:
    copy, ran = checkout(tmp_path, 'echo "setup-hatchet: built Hatchet"\n')
    done = setup(copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hatchet build | setup-hatchet: built Hatchet" in done.stdout
    steps = ran.read_text().splitlines()
    assert steps == [STEPS[0], "uv sync --all-extras --all-groups --quiet", *STEPS[1:]]
    assert (copy / ".cache" / "setup-hatchet.log").read_text() == "setup-hatchet: built Hatchet\n"


def test_a_failed_build_fails_setup_with_its_log_after_the_other_steps(tmp_path: Path) -> None:
    build = 'echo "go: reading the module failed: 403 Forbidden"\nexit 3\n'
    copy, ran = checkout(tmp_path, build)
    done = setup(copy)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "hatchet build | go: reading the module failed: 403 Forbidden" in done.stdout
    assert "the Hatchet build failed (exit 3)" in done.stderr
    assert len(ran.read_text().splitlines()) == len(STEPS) + 1  # every step still ran


def test_a_failed_step_stops_the_build_and_all_it_started(tmp_path: Path) -> None:
    """The build starts a child and says so through a FIFO, which the PostgreSQL step reads
    before it fails: so the build runs while the steps do, and setup stops it, child and all."""
    started = tmp_path / "build-started"
    os.mkfifo(started)
    pids = tmp_path / "build-pids"
    build = (
        'echo "setup-hatchet: building"\n'
        "tail -f /dev/null &\n"
        f'echo "$$ $!" > "{pids}"\n'
        f'echo started > "{started}"\n'
        "wait\n"
    )
    postgres = f'read -r _ < "{started}"\necho "setup-postgres: no server" >&2\nexit 1'
    copy, ran = checkout(tmp_path, build, postgres)
    done = setup(copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "setup-postgres: no server" in done.stderr
    assert "stopping the Hatchet build" in done.stderr
    assert "hatchet build | setup-hatchet: building" in done.stderr
    assert not ran.exists()  # nothing after the failed step ran
    build_pid, child_pid = (int(pid) for pid in pids.read_text().split())
    assert ends(build_pid)
    assert ends(child_pid)
