"""Turn the measurements into medians, paired ratios, a markdown report and a plot."""

import importlib.metadata
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common.machine import facts
from benchmarks.common.plot import save, two_panels
from benchmarks.foreground import load, targets

COLORS = {
    "bare": "#9e9e9e",
    "lgos": "#2e7d32",
    "lgos-nostore": "#81c784",
    "reference": "#ef6c00",
}
NON_STREAM_METRICS = (
    ("cpu_ms", "server CPU / request (ms)"),
    ("rps", "requests/s"),
    ("p50_ms", "p50 latency (ms)"),
    ("p99_ms", "p99 latency (ms)"),
)
STREAM_METRICS = (
    ("cpu_ms", "server CPU / 1000-chunk stream (ms)"),
    ("first_delta_ms", "time to first text delta (ms)"),
    ("chunks_s", "text chunks/s (one stream)"),
    ("bytes_per_chunk", "body bytes / text chunk"),
)


@dataclass
class ForegroundResults:
    """Per-pass metrics of every scenario and target, and the memory readings."""

    rss_early: int
    rss_late: int
    passes: int
    runs: dict[str, dict[str, list[dict[str, float]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    rss: dict[str, dict[str, float]] = field(default_factory=dict)
    sample_deltas: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def add(self, scenario: str, target: str, metrics: dict[str, float]) -> None:
        self.runs[scenario][target].append(metrics)

    def targets(self) -> list[str]:
        return list(self.rss)

    def median(self, scenario: str, target: str, key: str) -> float | None:
        values = [run[key] for run in self.runs[scenario].get(target, [])]
        return statistics.median(values) if values else None

    def pass_ratios(self, scenario: str, target: str, key: str) -> list[float]:
        """target / bare for each pass: both were measured back to back in that pass."""
        pairs = zip(self.runs[scenario].get(target, []), self.runs[scenario]["bare"], strict=False)
        return [mine[key] / bare[key] for mine, bare in pairs if bare[key]]

    def ratio(self, scenario: str, target: str, key: str) -> float | None:
        ratios = self.pass_ratios(scenario, target, key)
        return statistics.median(ratios) if ratios else None

    def pass_line(self, number: int, scenario: str) -> str:
        runs = self.runs[scenario]
        bare = runs["bare"][number - 1]["cpu_ms"]
        parts = []
        for target, metrics in runs.items():
            cpu = metrics[number - 1]["cpu_ms"]
            ratio = f" ({cpu / bare:.2f}x)" if target != "bare" and bare else ""
            parts.append(f"{target} {cpu:.3f} ms{ratio}")
        return f"pass {number}/{self.passes}  {scenario:<17} server CPU: " + " | ".join(parts)


def _fmt(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value >= 1 else f"{value:.3f}"


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine(
    mode: str,
    server_core: int | None,
    client_core: int | None,
    names: list[str],
    seconds: float,
    load_before: float,
) -> dict[str, str]:
    pinning = (
        f"servers on core {server_core}, client on core {client_core}"
        if server_core is not None
        else "not pinned (one core available)"
    )
    packages = ("lgos", "langgraph", "langchain-core", "fastapi", "uvicorn", "aiohttp")
    return {
        **facts(mode, seconds, load_before),
        "pinning": pinning,
        "versions": ", ".join(f"{name} {_version(name)}" for name in packages),
        "reference": targets.reference_versions() if "reference" in names else "not run",
    }


@dataclass(frozen=True)
class Check:
    """One target (issues 8 and 23): a value per target, and whether lgos meets it."""

    label: str
    value: Callable[[ForegroundResults, str], float | None]
    show: Callable[[float | None], str]
    passes: Callable[[float, ForegroundResults], bool]


def _cpu_check(scenario: str, limit: float) -> Check:
    return Check(
        f"{scenario}: server CPU ≤ {limit}× bare",
        lambda r, t: r.ratio(scenario, t, "cpu_ms"),
        _ratio,
        lambda v, r: v <= limit,
    )


def _rss_growth(results: ForegroundResults, target: str) -> float | None:
    rss = results.rss.get(target)
    return None if rss is None else rss["late"] - rss["early"]


def _bytes_check(results: ForegroundResults, target: str) -> float | None:
    return results.median("responses stream", target, "bytes_per_chunk")


def _fields(results: ForegroundResults, target: str) -> float | None:
    if target not in results.sample_deltas:
        return None
    return float(load.responses_delta_fields_ok(results.sample_deltas[target]))


CHECKS = (
    # Issue 23's floor (issue 8 asked 1.3x and 1.5x).
    *(_cpu_check(s, 1.15) for s in ("chat c1", "chat c32", "responses c1", "responses c32")),
    *(_cpu_check(s, 1.2) for s in ("chat stream", "responses stream")),
    *(
        Check(
            f"{scenario}: chunks/s ≥ 0.7× bare",
            lambda r, t, s=scenario: r.ratio(s, t, "chunks_s"),
            _ratio,
            lambda v, r: v >= 0.7,
        )
        for scenario in ("chat stream", "responses stream")
    ),
    Check(
        "responses stream: bytes / text delta ≤ reference's",
        _bytes_check,
        lambda v: "–" if v is None else f"{v:.0f} B",
        lambda v, r: v <= (_bytes_check(r, "reference") or float("inf")),
    ),
    Check(
        "responses text delta has every field the OpenAI SDK requires",
        _fields,
        lambda v: "–" if v is None else ("yes" if v else "no"),
        lambda v, r: bool(v),
    ),
    Check(
        "RSS growth between the two readings ≤ 10 MiB",
        _rss_growth,
        lambda v: "–" if v is None else f"{v:+.1f} MiB",
        lambda v, r: v <= 10,
    ),
)


def markdown(results: ForegroundResults, meta: dict[str, str]) -> str:
    names = results.targets()
    others = [name for name in names if name != "bare"]
    lines = [
        "# Benchmarks",
        "",
        f"LGOS against a bare FastAPI app running the same graphs (the floor) and against "
        f"`langgraph-openai-serve` {targets.REFERENCE_VERSION} (the reference), measured side "
        f"by side in one run. Regenerate with `just bench` (full) or `just bench --quick`.",
        "",
        f"- Date: {meta['date']} ({meta['mode']} run, passes: {results.passes}, "
        f"{meta['duration']})",
        f"- Machine: {meta['machine']}; {meta['pinning']}; 1-minute load average "
        f"{meta['load']} (other work on the machine shows up in wall-clock figures)",
        f"- Python {meta['python']}; commit {meta['commit']}",
        f"- Project environment: {meta['versions']}",
        f"- Reference environment: {meta['reference']}",
        "",
        "Values are medians over the passes. `×` is the median over passes of the ratio to bare "
        "measured in the same pass (paired), so slow drifts of the machine cancel out. Server CPU "
        "is the server process's own user + system time (kernel accounting) across a batch, "
        "divided by its requests: the stable figure on a noisy machine. Latency and throughput "
        "move with the machine's load; read them as a second opinion.",
        "",
        "## Targets (issues 8 and 23)",
        "",
        "| target | " + " | ".join(others) + " | lgos meets it |",
        "| --- | " + " | ".join("---:" for _ in others) + " | :---: |",
    ]
    for check in CHECKS:
        cells = [check.show(check.value(results, name)) for name in others]
        mine = check.value(results, "lgos") if "lgos" in names else None
        verdict = "–" if mine is None else ("pass" if check.passes(mine, results) else "**fail**")
        lines.append(f"| {check.label} | " + " | ".join(cells) + f" | {verdict} |")
    header = "| scenario | metric | bare | " + " | ".join(f"{n} | ×" for n in others) + " |"
    lines += [
        "",
        "## All measurements",
        "",
        "Non-streaming scenarios use the `echo` graph (`sleep c100`: the `sleep` graph, Chat); "
        "streams use `stream-long` (1000 text chunks) one at a time. Body bytes count the SSE "
        "body as received, without HTTP headers and chunked framing.",
        "",
        header,
        "| --- | --- | ---: | " + " | ".join("---: | ---:" for _ in others) + " |",
    ]
    for scenario, runs in results.runs.items():
        metrics = STREAM_METRICS if "stream" in scenario else NON_STREAM_METRICS
        for key, label in metrics:
            cells = [_fmt(results.median(scenario, "bare", key))]
            for name in others:
                if name not in runs:
                    cells += ["–", "–"]
                    continue
                cells += [_fmt(results.median(scenario, name, key))]
                cells += [_ratio(results.ratio(scenario, name, key))]
            lines.append(f"| {scenario} | {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Memory",
        "",
        f"RSS of each server: idle after start-up, after {results.rss_early:,} and after "
        f"{results.rss_late:,} non-streaming requests (Chat and Responses, concurrency 32).",
        "",
        f"| target | idle (MiB) | after {results.rss_early:,} | after {results.rss_late:,} "
        "| growth |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, rss in results.rss.items():
        growth = rss["late"] - rss["early"]
        lines.append(
            f"| {name} | {rss['idle']:.1f} | {rss['early']:.1f} | {rss['late']:.1f} "
            f"| {growth:+.1f} |"
        )
    lines += [
        "",
        "## Server CPU ratio to bare, pass by pass",
        "",
        "| scenario | target | "
        + " | ".join(f"pass {i + 1}" for i in range(results.passes))
        + " |",
        "| --- | --- | " + " | ".join("---:" for _ in range(results.passes)) + " |",
    ]
    for scenario in results.runs:
        for name in others:
            ratios = results.pass_ratios(scenario, name, "cpu_ms")
            lines.append(
                f"| {scenario} | {name} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |"
            )
    lines += _storing(results)
    lines += ["", "![Benchmark ratios](img/benchmarks.png)", "", *_method(meta)]
    return "\n".join(lines)


def _storing(results: ForegroundResults) -> list[str]:
    """What keeping every Response costs: lgos (store on by default) against lgos-nostore."""
    names = results.targets()
    if "lgos" not in names or "lgos-nostore" not in names:
        return []
    lines = [
        "",
        "## Cost of storing Responses",
        "",
        "Server CPU per request of `lgos` (every Response stored, the default) and "
        "`lgos-nostore` (`LGOS_STORE_RESPONSES=false`), in memory. Chat Completions never "
        "stores, so its rows show the noise of the run.",
        "",
        "| scenario | store on (ms) | store off (ms) | difference |",
        "| --- | ---: | ---: | ---: |",
    ]
    for scenario in results.runs:
        stored = results.median(scenario, "lgos", "cpu_ms")
        unstored = results.median(scenario, "lgos-nostore", "cpu_ms")
        if stored is None or unstored is None:
            continue
        lines.append(
            f"| {scenario} | {_fmt(stored)} | {_fmt(unstored)} | {stored - unstored:+.2f} ms |"
        )
    return lines


def _method(meta: dict[str, str]) -> list[str]:
    flags = " ".join(targets.UVICORN_FLAGS)
    return [
        "## Method",
        "",
        "- Graphs (`benchmarks/foreground/graphs.py`), served by every target: `echo` (one async "
        "node answering the last user message), `stream-long` (a fake chat model streaming 1000 "
        "small chunks through LangChain's callbacks, yielding to the event loop between chunks "
        "as a model reading its socket would), `sleep` (one node awaiting 50 ms).",
        "- **bare** (`benchmarks/foreground/bare.py`): a FastAPI app with two plain routes that "
        "decode only model, stream and the last user text, call `ainvoke` or `astream(stream_mode="
        '"messages")` and write minimal OpenAI-shaped JSON or SSE. The floor.',
        "- **lgos**: `lgos serve benchmarks.foreground.graphs:create_registry`, in-memory defaults "
        "(Responses are stored: `store` defaults to true).",
        "- **lgos-nostore** (when run): the same with `LGOS_STORE_RESPONSES=false`; the "
        "difference to **lgos** on the Responses rows is the cost of storing.",
        f"- **reference**: `langgraph-openai-serve` {targets.REFERENCE_VERSION}'s own "
        "`lgos serve benchmarks.foreground.graphs:create_reference_registry`, installed in its own "
        "environment (`benchmarks/.venv-reference`, never a project dependency).",
        f"- Each target is one Uvicorn process with the same flags (`{flags}`), pinned to one "
        "core; the load client (aiohttp, keep-alive connections) runs in a separate process "
        "pinned to the other core. `--log-level warning` leaves out every target's `info` "
        "records, LGOS's record of each request included (written before 2026-12-07, when "
        "`lgos serve` applied the option to Uvicorn's loggers only); "
        "`python -m benchmarks.foreground.features` measures that record's cost.",
        f"- Counts ({meta['mode']} run): {meta['counts']}. Before the passes, each target "
        "serves the memory phase and a warm-up. Every pass after the first runs on fresh "
        "processes, started again, given as many Responses as the memory phase stores (up to "
        "LGOS's in-memory cap) and warmed up: two processes of one server differ by a few per "
        "cent at c1 for their whole lives, so the median over passes is also a median over "
        "processes. In every pass each scenario's batch is sent in "
        "slices, the targets taking turns slice by slice (bare, lgos, reference, then the "
        "reverse), so each ratio compares figures measured within a second or two of each "
        "other. Server CPU is the kernel scheduler's nanosecond count for the whole process.",
        "- Wall-clock figures depend on the machine's other work: on a shared core a server "
        "with more runnable threads (the reference runs work on a thread pool) gets a larger "
        "share, so trust the CPU ratios first.",
        "- `lgos serve` moves the objects alive after start-up out of the garbage collector's "
        "sight (`gc.freeze`); bare and the reference do not, which is part of why LGOS can come "
        "out below 1.0× of bare.",
        "",
    ]


def plot(results: ForegroundResults, path: Path) -> None:
    others = [name for name in results.targets() if name != "bare"]
    rows = [
        (f"{scenario}: server CPU", scenario, "cpu_ms")
        for scenario in results.runs
        if scenario != "sleep c100"
    ]
    rows += [(f"{s}: chunks/s", s, "chunks_s") for s in ("chat stream", "responses stream")]
    rows += [("sleep c100: requests/s", "sleep c100", "rps")]
    figure, left, right = two_panels()
    height = 0.8 / max(1, len(others))
    for index, name in enumerate(others):
        values = [results.ratio(scenario, name, key) or 0 for _, scenario, key in rows]
        positions = [row + index * height for row in range(len(rows))]
        left.barh(positions, values, height=height, label=name, color=COLORS[name])
        for position, value in zip(positions, values, strict=True):
            left.text(value, position, f" {value:.2f}", va="center", fontsize=7)
    left.axvline(1.0, color="black", linewidth=0.8)
    left.set_yticks([row + height * (len(others) - 1) / 2 for row in range(len(rows))])
    left.set_yticklabels([label for label, _, _ in rows], fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("ratio to bare (median of per-pass ratios; 1 = bare)")
    if others:
        left.legend()
    left.set_title("Against the bare floor")

    scenarios = [s for s in results.runs if s != "sleep c100"]
    names = results.targets()
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        values = [(results.median(s, name, "cpu_ms") or 0) for s in scenarios]
        positions = [i + index * width for i in range(len(scenarios))]
        right.bar(positions, values, width, label=name, color=COLORS[name])
    right.set_xticks([i + width * (len(names) - 1) / 2 for i in range(len(scenarios))])
    right.set_xticklabels(scenarios, rotation=30, ha="right", fontsize=8)
    right.set_yscale("log")
    right.set_ylabel("server CPU per request or stream (ms, log)")
    right.legend()
    right.set_title("Server CPU time")
    save(figure, path)
