"""The suite's report: goals (ratios to the floors), a markdown page and a plot."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common.plot import labelled_bars, save, two_panels
from benchmarks.durable.lgos_runs import STREAMED
from benchmarks.durable.measure import DurableCounts, DurableResults
from benchmarks.durable.timing import IN_FLIGHT


def _paired(results: DurableResults, numerator: str, *floor: tuple[float, str]) -> float | None:
    """The median over passes of numerator / sum(weight × floor), pass by pass."""
    top = results.passes.get(numerator)
    parts = [(weight, results.passes.get(name)) for weight, name in floor]
    if not top or any(not values for _, values in parts):
        return None
    ratios = [
        value / sum(weight * values[index] for weight, values in parts)  # type: ignore[index]
        for index, value in enumerate(top)
    ]
    return statistics.median(ratios)


@dataclass(frozen=True)
class Goal:
    name: str
    ratio: float | None
    limit: float
    at_most: bool  # True: ratio ≤ limit passes; False: ratio ≥ limit passes
    unit: str = "×"

    @property
    def met(self) -> bool | None:
        if self.ratio is None:
            return None
        return self.ratio <= self.limit if self.at_most else self.ratio >= self.limit

    def row(self) -> str:
        sign = "≤" if self.at_most else "≥"
        shown = "—" if self.ratio is None else f"{self.ratio:.2f}{self.unit}"
        verdict = {True: "pass", False: "**miss**", None: "—"}[self.met]
        return f"| {self.name} | {sign} {self.limit:g}{self.unit} | {shown} | {verdict} |"


def goals(results: DurableResults) -> list[Goal]:
    found = [
        Goal(
            f"{engine}: create→completed ÷ (engine floor + checkpoint floor)",
            _paired(
                results, f"lgos {engine}", (1, f"{engine} engine floor"), (1, "checkpoint floor")
            ),
            1.5,
            True,
        )
        for engine in ("dbos", "hatchet")
    ]
    found.append(
        Goal(
            "(not a goal) hatchet: create→completed ÷ (REST-polled floor + checkpoint floor)",
            _paired(
                results,
                "lgos hatchet",
                (1, "hatchet floor, REST polled"),
                (1, "checkpoint floor"),
            ),
            1.5,
            True,
        )
    )
    found += [
        Goal(
            f"{engine}: runs/s ÷ engine floor runs/s",
            _paired(results, f"lgos {engine} burst", (1, f"{engine} engine floor burst")),
            0.7,
            False,
        )
        for engine in ("dbos", "hatchet")
    ]
    # Hatchet at the speed of its engine (issue 29): LGOS against Hatchet running the same
    # graph itself, each client told of the end by push (LGOS's stream of the run, the
    # engine's subscription). The polled figures stay, not as goals: a client that polls
    # learns of an end up to a poll interval late, against the REST-polled floor (latency)
    # and the floor's own burst (runs/s).
    streamed = f"lgos hatchet{STREAMED}"
    found += [
        Goal(
            "hatchet, streamed: create→completed ÷ engine + graph floor",
            _paired(results, streamed, (1, "hatchet engine + graph floor")),
            1.3,
            True,
        ),
        Goal(
            "hatchet, streamed: runs/s ÷ engine + graph floor runs/s",
            _paired(results, f"{streamed} burst", (1, "hatchet engine + graph floor burst")),
            0.8,
            False,
        ),
        # The measure of the rounds before 2026-12-06 (LGOS polled every 10 ms against the
        # floor's push), kept so a reader can follow the figures across rounds.
        Goal(
            "(not a goal) hatchet, polled: create→completed ÷ engine + graph floor",
            _paired(results, "lgos hatchet", (1, "hatchet engine + graph floor")),
            1.3,
            True,
        ),
        Goal(
            "(not a goal) hatchet, polled: create→completed ÷ engine + graph floor, REST polled",
            _paired(results, "lgos hatchet", (1, "hatchet engine + graph floor, REST polled")),
            1.3,
            True,
        ),
        Goal(
            "(not a goal) hatchet, polled: runs/s ÷ engine + graph floor runs/s",
            _paired(results, "lgos hatchet burst", (1, "hatchet engine + graph floor burst")),
            0.8,
            False,
        ),
    ]
    # Not the goals: LGOS on DBOS against DBOS running the same graph itself, which
    # says what LGOS adds to a background run, apart from what the graph costs.
    found += [
        Goal(
            "(not a goal) dbos: create→completed ÷ engine + graph floor",
            _paired(results, "lgos dbos", (1, "dbos engine + graph floor")),
            1.5,
            True,
        ),
        Goal(
            "(not a goal) dbos: runs/s ÷ engine + graph floor runs/s",
            _paired(results, "lgos dbos burst", (1, "dbos engine + graph floor burst")),
            0.7,
            False,
        ),
    ]
    found.append(
        Goal(
            "review round trip, foreground ÷ review floor",
            _paired(results, "lgos review foreground", (1, "review floor")),
            1.3,
            True,
        )
    )
    found.append(
        Goal(
            "(not a goal) review round trip, foreground, store=false ÷ review floor",
            _paired(results, "lgos review foreground, store=false", (1, "review floor")),
            1.3,
            True,
        )
    )
    found.append(
        Goal(
            "review round trip, background (DBOS) ÷ (review floor + 2 × engine floor)",
            _paired(
                results,
                "lgos review background dbos",
                (1, "review floor"),
                (2, "dbos engine floor"),
            ),
            1.3,
            True,
        )
    )
    found.append(
        Goal(
            "stream tail: event written → client receives, p50",
            statistics.median(results.tail_samples) if results.tail_samples else None,
            10,
            True,
            " ms",
        )
    )
    return [goal for goal in found if goal.ratio is not None]


_LABELS = {
    "dbos engine floor": ("DBOS alone: enqueue → result", "ms"),
    "hatchet engine floor": ("Hatchet alone: trigger → result", "ms"),
    "hatchet floor, REST polled": ("Hatchet alone: trigger → REST shows completed", "ms"),
    "hatchet engine + graph floor, REST polled": (
        "Hatchet running background-mock itself: trigger → REST shows completed",
        "ms",
    ),
    "dbos engine + graph floor": ("DBOS running background-mock itself: enqueue → result", "ms"),
    "hatchet engine + graph floor": (
        "Hatchet running background-mock itself: trigger → result",
        "ms",
    ),
    "checkpoint floor": ("LangGraph alone, background-mock, PostgreSQL, durability=sync", "ms"),
    "review floor": ("LangGraph alone, background-interrupt: pause + resume", "ms"),
    "lgos memory": ("LGOS in-memory engine: create → completed", "ms"),
    "lgos dbos": ("LGOS DBOS: create → completed", "ms"),
    "lgos hatchet": ("LGOS Hatchet: create → completed (polled)", "ms"),
    f"lgos hatchet{STREAMED}": ("LGOS Hatchet: create → completed (streamed)", "ms"),
    "lgos review foreground": ("LGOS review round trip, foreground, PostgreSQL", "ms"),
    "lgos review foreground, store=false": (
        "LGOS review round trip, foreground, PostgreSQL, no stored Responses",
        "ms",
    ),
    "lgos review background dbos": ("LGOS review round trip, background DBOS", "ms"),
    "lgos stream tail dbos": (
        "LGOS stream tail (DBOS): append → client (median of pass p50s)",
        "ms",
    ),
    "dbos engine floor burst": ("DBOS alone, burst", "runs/s"),
    "hatchet engine floor burst": ("Hatchet alone, burst", "runs/s"),
    "dbos engine + graph floor burst": ("DBOS running background-mock itself, burst", "runs/s"),
    "hatchet engine + graph floor burst": (
        "Hatchet running background-mock itself, burst",
        "runs/s",
    ),
    "lgos memory burst": ("LGOS in-memory engine, burst", "runs/s"),
    "lgos dbos burst": ("LGOS DBOS, burst", "runs/s"),
    "lgos hatchet burst": ("LGOS Hatchet, burst (polled)", "runs/s"),
    f"lgos hatchet{STREAMED} burst": ("LGOS Hatchet, burst (streamed)", "runs/s"),
}


def markdown(results: DurableResults, meta: dict[str, str], counts: DurableCounts) -> str:
    lines = [
        f"- Date: {meta['date']} ({meta['mode']} run, {counts.passes} passes, "
        f"{meta['duration']}); commit {meta['commit']}",
        f"- Machine: {meta['machine']}; 1-minute load average {meta['load']}; "
        f"Python {meta['python']}",
        f"- Counts: {counts.runs} one-at-a-time runs per latency batch, bursts of "
        f"{counts.burst} ({IN_FLIGHT} creates in flight), {counts.ticks} stream-tail events "
        "per pass",
        "",
        "| goal | limit | measured | |",
        "| --- | ---: | ---: | :---: |",
        *(goal.row() for goal in goals(results)),
        "",
        "| measurement | median | per pass |",
        "| --- | ---: | --- |",
    ]
    for name, values in results.passes.items():
        label, unit = _LABELS.get(name, (name, ""))
        shown = ", ".join(f"{value:.1f}" for value in values)
        lines.append(f"| {label} | {statistics.median(values):.1f} {unit} | {shown} |")
    if results.cpu:
        lines += [
            "",
            "CPU per run during the bursts (user + system, every process serving the burst: "
            "LGOS's API and workers; the floors' workers only, their client runs in the "
            "benchmark process; engines' own services not counted), and of the checkpoint "
            "floor (this process, one run at a time):",
            "",
            "| burst | CPU ms per run | per pass |",
            "| --- | ---: | --- |",
        ]
        for name, values in results.cpu.items():
            label, _ = _LABELS.get(name, (name, ""))
            shown = ", ".join(f"{value:.1f}" for value in values)
            lines.append(f"| {label} | {statistics.median(values):.1f} | {shown} |")
    if results.tail_samples:
        samples = sorted(results.tail_samples)
        p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
        lines += [
            "",
            f"Stream tail, all {len(samples)} events: p50 {statistics.median(samples):.1f} ms, "
            f"p90 {p90:.1f} ms, max {samples[-1]:.1f} ms.",
        ]
    return "\n".join(lines) + "\n"


def plot(results: DurableResults, path: Path) -> None:
    figure, left, right = two_panels()
    for axis, names in (
        (left, [name for name in results.passes if not name.endswith("burst")]),
        (right, [name for name in results.passes if name.endswith("burst")]),
    ):
        colors = ["#9aa5b1" if "floor" in name else "#2b6cb0" for name in names]
        labelled_bars(axis, names, [results.median(name) or 0 for name in names], colors)
    left.set_xscale("log")
    left.set_xlabel("median ms (log; grey: floors, blue: LGOS)")
    left.set_title("Latency")
    right.set_xlabel("runs/s (median over passes)")
    right.set_title("Throughput")
    save(figure, path)
