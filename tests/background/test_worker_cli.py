"""`lgos worker` refuses a setup it cannot run, with a one-line reason and exit status 2."""

from __future__ import annotations

import subprocess

import pytest

from tests.background.conftest import REGISTRY
from tests.support.processes import LGOS, REPO, clean_environment

# Starts real processes (or a browser): slower than the suite-wide timeout on a busy host.
pytestmark = pytest.mark.timeout(600)


def run_worker(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LGOS, "worker", REGISTRY],
        cwd=REPO,
        env=clean_environment(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("engine", ["memory", "none"])
def test_worker_needs_an_engine_with_workers(engine: str) -> None:
    result = run_worker(LGOS_BACKGROUND=engine)
    assert result.returncode == 2
    assert "LGOS_BACKGROUND=dbos or LGOS_BACKGROUND=hatchet" in result.stderr


def test_dbos_worker_needs_postgres() -> None:
    result = run_worker(LGOS_BACKGROUND="dbos")
    assert result.returncode == 2
    assert "LGOS_BACKGROUND=dbos needs LGOS_POSTGRES_URI" in result.stderr


def test_hatchet_worker_needs_a_token(tmp_path: object) -> None:
    result = run_worker(LGOS_BACKGROUND="hatchet")
    assert result.returncode == 2
    assert "HATCHET_CLIENT_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr


def test_worker_names_a_bad_registry() -> None:
    result = subprocess.run(
        [LGOS, "worker", "no_such_module:create"],
        cwd=REPO,
        env=clean_environment(LGOS_BACKGROUND="dbos"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "no_such_module" in result.stderr
