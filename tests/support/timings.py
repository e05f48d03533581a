"""Send → visible times of the browser flows the docs report, written to build/timings/."""

from __future__ import annotations

import json
import time

from tests.support.processes import REPO


class Timings:
    """Measured, never asserted: the machine's load decides them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[tuple[str, float]] = []

    def record(self, step: str, started: float) -> None:
        self.rows.append((step, round(time.monotonic() - started, 2)))

    def save(self) -> None:
        if not self.rows:
            return
        folder = REPO / "build" / "timings"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"{self.name}.jsonl").open("a") as out:
            for step, seconds in self.rows:
                out.write(json.dumps({"step": step, "seconds": seconds}) + "\n")
