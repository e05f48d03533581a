"""CompatCanary (an independent scanner of OpenAI-style APIs, from npm) against `lgos serve`.

Run as its users run it: `npx --yes compatcanary@0.2.2 scan`, over HTTP, version pinned.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

PACKAGE = "compatcanary@0.2.2"
PROFILES = ("modern", "chat")
RUN_TIMEOUT = 300


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    required: bool
    status: str  # pass | warn | fail
    summary: str


@dataclass(frozen=True, slots=True)
class Scan:
    profile: str
    score: int
    compatible: bool
    checks: tuple[Check, ...]


def unavailable_reason() -> str | None:
    return None if shutil.which("npx") else "npx (Node.js) is not installed"


def scan(base_url: str, model: str, profile: str) -> Scan:
    npx = shutil.which("npx")
    assert npx is not None
    command = [npx, "--yes", PACKAGE, "scan", "--base-url", base_url + "/v1", "--model", model]
    result = subprocess.run(
        [*command, "--profile", profile, "--format", "json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
        env={"OPENAI_API_KEY": "unused", "PATH": os.environ.get("PATH", ""), "HOME": _home()},
    )
    try:
        report: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"CompatCanary printed no report:\n{result.stderr}") from None
    return Scan(
        profile,
        int(report["score"]),
        bool(report["compatible"]),
        tuple(
            Check(item["name"], bool(item["required"]), item["status"], item["summary"])
            for item in report["results"]
        ),
    )


def _home() -> str:
    # npx keeps its package cache under HOME.
    return os.environ.get("HOME", "/tmp")
