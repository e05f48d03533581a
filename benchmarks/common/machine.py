"""The facts a report opens with, so a figure can be read against the machine that made it."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def commit() -> str:
    found = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    return found or "uncommitted"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def facts(mode: str, seconds: float, load_before: float) -> dict[str, str]:
    """Date, size, machine, Python, commit, duration and the 1-minute load around the run."""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": mode,
        "machine": f"{cpu_model()}, {os.cpu_count()} logical CPUs, Linux {platform.release()}",
        "python": platform.python_version(),
        "commit": commit(),
        "duration": f"{seconds:.0f} s",
        "load": f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after",
    }
