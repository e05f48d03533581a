"""The per-feature benchmark (`python -m benchmarks.foreground.features`) reports what each
LGOS feature costs by switching it off. A switch that patches a name the request path no
longer calls switches nothing off, and the tool then reports noise as the feature's cost (the
request record's switch did, once `Guarded` called `log_request` directly)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(240)

REPO = Path(__file__).resolve().parents[2]


def test_every_feature_switch_takes_work_off_the_request_path() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.foreground.features", "--check", "--warmup", "10"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
