"""The compose stacks' preparation (tests/compose/prepare.py) starts only in a run that uses it.

Each case runs pytest in a subprocess, with a `docker` first on PATH that writes down every call
(it answers `info` and `image inspect`, so no real engine or image is reached) and DOCKER_HOST
naming a socket nobody listens on: a run that started the preparation would ask that `docker`
for an engine, and its log would say that it started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .stack import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
STARTED = "compose-stack: preparing the Docker engine and images"
STACK_TESTS = "tests/compose/test_stack.py"


def run_pytest(tmp_path: Path, *args: str, opted_in: bool = True) -> tuple[str, Path]:
    """pytest on `args` as `just test` would run it; its output, and where the fake `docker`
    wrote its calls."""
    calls = tmp_path / "docker-calls"
    shims = tmp_path / "bin"
    shims.mkdir()
    docker = shims / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        'case "$*" in\n'
        '    "image inspect "*|*" info") exit 0 ;;\n'
        "esac\n"
        "exit 1\n"
    )
    docker.chmod(0o755)
    ours = ("LGOS_TEST_COMPOSE", "LGOS_COMPOSE_ALL", "DOCKER_HOST")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PYTEST_") and key not in ours
    }
    env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
    env["DOCKER_HOST"] = f"unix://{tmp_path / 'nobody-listens.sock'}"
    if opted_in:
        env["LGOS_TEST_COMPOSE"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    return done.stdout + done.stderr, calls


@pytest.mark.parametrize(
    ("args", "opted_in", "summary"),
    [
        pytest.param([STACK_TESTS, "--collect-only"], True, "tests collected", id="collect-only"),
        pytest.param(
            [STACK_TESTS, "-k", "stand_ins_are_the_versions"], True, "1 passed", id="no-stack-test"
        ),
        pytest.param(
            [f"{STACK_TESTS}::test_every_started_service_is_healthy_or_done"],
            False,
            "1 skipped",
            id="not-opted-in",
        ),
    ],
)
def test_a_run_that_starts_no_stack_starts_no_engine(
    tmp_path: Path, args: list[str], opted_in: bool, summary: str
) -> None:
    output, calls = run_pytest(tmp_path, *args, opted_in=opted_in)
    assert summary in output, output[-4000:]
    assert STARTED not in output, output[-4000:]
    assert not calls.exists(), calls.read_text()


def test_a_stack_test_starts_it_and_a_failed_preparation_fails_once_with_its_log(
    tmp_path: Path,
) -> None:
    """The same `docker` answers, but nothing listens where it says the engine is: the
    preparation starts at the end of collection, its `compose build` fails, the first stack
    test fails with what the preparation logged, and the next one is skipped pointing there."""
    output, calls = run_pytest(tmp_path, STACK_TESTS, "-k", "healthy_or_done or collector")
    assert STARTED in output, output[-4000:]
    assert calls.exists(), output[-4000:]
    assert " info" in calls.read_text()  # it asked the `docker` on PATH for the engine
    assert "1 failed, 1 skipped" in output, output[-4000:]
    assert "the Docker engine and images of the compose tests did not start" in output, output[
        -4000:
    ]
    assert "what the preparation logged" in output, output[-4000:]
    # compose's own error: it found no engine at the socket it was given.
    assert str(tmp_path / "nobody-listens.sock") in output, output[-4000:]
    assert "did not start; the first test that needed it says why" in output, output[-4000:]
