"""The foreground suite: `just bench [--quick | --smoke]` (`python -m benchmarks.foreground`).

Starts every target (bare, lgos, reference) as its own Uvicorn process pinned to one core, drives
them from this process pinned to the other core, interleaving the targets in short slices of
each batch for several passes, and writes a markdown report and a plot.
"""

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import processes
from benchmarks.common.machine import REPO
from benchmarks.common.sizes import add_size_options, chosen_size
from benchmarks.foreground import load, report, targets
from benchmarks.foreground.graphs import STREAM_CHUNKS
from benchmarks.foreground.load import Scenario

SCENARIOS = (
    Scenario("chat c1", "chat", "echo", stream=False, concurrency=1),
    Scenario("chat c32", "chat", "echo", stream=False, concurrency=32),
    Scenario("responses c1", "responses", "echo", stream=False, concurrency=1),
    Scenario("responses c32", "responses", "echo", stream=False, concurrency=32),
    Scenario("chat stream", "chat", "stream-long", stream=True, concurrency=1),
    Scenario("responses stream", "responses", "stream-long", stream=True, concurrency=1),
    Scenario("sleep c100", "chat", "sleep", stream=False, concurrency=100),
)


@dataclass(frozen=True)
class ForegroundCounts:
    passes: int
    c1: int  # non-streaming requests per batch at concurrency 1
    c32: int  # ... at concurrency 32
    streams: int  # 1000-chunk streams per batch
    sleep: int  # requests per `sleep` batch at concurrency 100
    rss_early: int  # RSS is read after this many requests ...
    rss_late: int  # ... and after this many
    warmup: int
    # Each pass's batch of a scenario is sent in this many slices, the targets taking turns
    # slice by slice (in the reverse order every other slice), so the targets' figures are
    # measured within a second of each other and a few seconds of the host's other work
    # weigh on both alike.
    slices: int

    def requests(self, scenario: Scenario) -> int:
        if scenario.stream:
            return self.streams
        if scenario.model == "sleep":
            return self.sleep
        return self.c1 if scenario.concurrency == 1 else self.c32


MODES = {
    "full": ForegroundCounts(
        passes=5,
        c1=400,
        c32=1500,
        streams=20,
        sleep=2000,
        rss_early=1000,
        rss_late=25000,
        warmup=200,
        slices=8,
    ),
    "quick": ForegroundCounts(
        passes=3,
        c1=80,
        c32=250,
        streams=3,
        sleep=300,
        rss_early=1000,
        rss_late=1500,
        warmup=20,
        slices=2,
    ),
    "smoke": ForegroundCounts(
        passes=1,
        c1=5,
        c32=40,
        streams=1,
        sleep=100,
        rss_early=100,
        rss_late=200,
        warmup=5,
        slices=1,
    ),
}
SETTLE = 0.05  # seconds after a batch before reading the server's CPU time


def _metrics(scenario: Scenario, batch: load.Batch, cpu: float) -> dict[str, float]:
    per_request = cpu / batch.requests * 1000
    if scenario.stream:
        if set(batch.deltas) != {STREAM_CHUNKS}:
            print(f"note: {scenario.name} streams carried {sorted(set(batch.deltas))} text deltas")
        return {
            "cpu_ms": per_request,
            "first_delta_ms": statistics.median(batch.first_delta) * 1000,
            "chunks_s": statistics.median(
                n / t for n, t in zip(batch.deltas, batch.durations, strict=True)
            ),
            "bytes_per_chunk": statistics.median(
                b / n for b, n in zip(batch.body_bytes, batch.deltas, strict=True)
            ),
        }
    latencies = sorted(batch.latencies)
    return {
        "cpu_ms": per_request,
        "rps": batch.requests / batch.wall,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


async def _measured(
    target: targets.Target, session: Any, scenario: Scenario, requests: int
) -> tuple[load.Batch, float]:
    before = target.cpu_seconds()
    batch = await load.run_batch(session, target.url, scenario, requests)
    await asyncio.sleep(SETTLE)
    return batch, target.cpu_seconds() - before


def _slices(
    requests: int, slices: int, servers: list[targets.Target]
) -> list[tuple[int, list[targets.Target]]]:
    """A batch of `requests` in `slices` parts (as even as can be), each with the order the
    targets take their turns in: forward, backward, forward..., so neither always goes first."""
    slices = max(1, min(slices, requests))
    sizes = [
        requests // slices + (1 if index < requests % slices else 0) for index in range(slices)
    ]
    return [
        (size, servers if index % 2 == 0 else servers[::-1]) for index, size in enumerate(sizes)
    ]


MEMORY_STEP = 500  # the memory phase alternates Chat and Responses batches of this size
# LGOS keeps at most 1,000 Responses in memory (`lgos.core.stored_memory.MAX_RECORDS`): a
# fresh process given this many holds as many as one that served the whole memory phase.
STORE_FILL = 1_100


def _memory_batches(goal: int, sent: int = 0) -> Iterator[tuple[Scenario, int]]:
    """The memory phase's batches from `sent` requests on up to `goal`: Chat and Responses
    (non-streaming, c32) by turns, `MEMORY_STEP` requests each, Chat first."""
    while sent < goal:
        step = min(MEMORY_STEP, goal - sent)
        yield (SCENARIOS[1] if (sent // MEMORY_STEP) % 2 == 0 else SCENARIOS[3]), step
        sent += step


async def _memory(
    target: targets.Target, session: Any, counts: ForegroundCounts
) -> dict[str, float]:
    """RSS idle, after `rss_early` and after `rss_late` non-streaming echo requests."""
    rss = {"idle": target.rss_mib()}
    sent = 0
    for label, goal in (("early", counts.rss_early), ("late", counts.rss_late)):
        for scenario, step in _memory_batches(goal, sent):
            await load.run_batch(session, target.url, scenario, step)
        sent = max(sent, goal)
        await asyncio.sleep(0.5)
        rss[label] = target.rss_mib()
    return rss


async def _warm_up(target: targets.Target, session: Any, counts: ForegroundCounts) -> None:
    for scenario in SCENARIOS:
        warmup = min(counts.warmup, 2) if scenario.stream else counts.warmup
        await load.run_batch(session, target.url, scenario, warmup)


async def _restarted(
    servers: list[targets.Target], counts: ForegroundCounts, logs: Path
) -> dict[str, Any]:
    """Every target stopped and started again as a fresh process, brought to the state the
    memory phase leaves it in (its stored Responses, the warm-up); new client sessions.

    Each pass after the first runs on fresh processes: two processes of the same server
    differ by a few per cent at c1 for the whole of their lives (their own hash seed and
    address space lay out dicts and objects differently; docs/benchmarks.md, 2026-12-07,
    third round), and a ratio measured on one process each would carry that as a bias."""
    for server in servers:
        server.stop()
    for server in servers:
        server.port = processes.free_port()
        server.start(logs)
    for server in servers:
        server.wait_ready()
    sessions = {server.name: load.session(limit=128) for server in servers}
    memory_phase = _memory_batches(counts.rss_late)
    fill = min(
        sum(step for scenario, step in memory_phase if scenario.api == "responses"), STORE_FILL
    )
    for server in servers:
        session = sessions[server.name]
        if fill:
            await load.run_batch(session, server.url, SCENARIOS[3], fill)
        await _warm_up(server, session, counts)
    return sessions


async def _run(
    servers: list[targets.Target], counts: ForegroundCounts, logs: Path
) -> report.ForegroundResults:
    results = report.ForegroundResults(counts.rss_early, counts.rss_late, counts.passes)
    sessions = {server.name: load.session(limit=128) for server in servers}
    try:
        for server in servers:
            print(f"memory + warm-up: {server.name}", flush=True)
            results.rss[server.name] = await _memory(server, sessions[server.name], counts)
            await _warm_up(server, sessions[server.name], counts)
        for number in range(1, counts.passes + 1):
            if number > 1:
                for session in sessions.values():
                    await session.close()
                print("fresh processes for the next pass", flush=True)
                sessions = await _restarted(servers, counts, logs)
            for scenario in SCENARIOS:
                batches = {server.name: load.Batch() for server in servers}
                cpu = dict.fromkeys(batches, 0.0)
                for requests, order in _slices(counts.requests(scenario), counts.slices, servers):
                    for server in order:
                        part, used = await _measured(
                            server, sessions[server.name], scenario, requests
                        )
                        batches[server.name].extend(part)
                        cpu[server.name] += used
                for server in servers:
                    batch = batches[server.name]
                    results.add(
                        scenario.name, server.name, _metrics(scenario, batch, cpu[server.name])
                    )
                    if scenario.name == "responses stream":
                        results.sample_deltas.setdefault(server.name, batch.sample_delta)
                print(results.pass_line(number, scenario.name), flush=True)
    finally:
        for session in sessions.values():
            await session.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.foreground", description=__doc__)
    add_size_options(parser, quick="under two minutes")
    parser.add_argument(
        "--targets",
        default="bare,lgos,lgos-nostore,reference",
        help="comma-separated, in interleaving order (default: bare,lgos,lgos-nostore,reference; "
        "lgos-nostore is lgos with LGOS_STORE_RESPONSES=false)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where the report and plot go (default: docs/ for a full run, "
        "benchmarks/.results/ for --quick and --smoke)",
    )
    args = parser.parse_args(argv)
    mode = chosen_size(args)
    counts = MODES[mode]
    out = args.out or (REPO / "docs" if mode == "full" else REPO / "benchmarks" / ".results")

    names = [name.strip() for name in args.targets.split(",") if name.strip()]
    unknown = set(names) - {"bare", "lgos", "lgos-nostore", "reference"}
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if not targets.lgos_available():
        for name in ("lgos", "lgos-nostore"):
            if name in names:
                print(f"lgos is not importable here; skipping the {name} target", file=sys.stderr)
                names.remove(name)
    if names[0] != "bare":
        parser.error("the first target must be bare: every ratio is against it")
    server_core, client_core = targets.cores()
    argvs = targets.commands(names)
    servers = [
        targets.Target(name, argvs[name], server_core, env=targets.ENVIRONMENTS.get(name, {}))
        for name in names
    ]

    started = time.time()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="lgos-bench-") as logs:
        try:
            for server in servers:
                server.start(Path(logs))
            for server in servers:
                server.wait_ready()
            if client_core is not None:
                os.sched_setaffinity(0, {client_core})
            time.sleep(2)  # let the servers finish starting before reading idle memory
            results = asyncio.run(_run(servers, counts, Path(logs)))
        except BaseException:
            for server in servers:
                if server.log is not None and server.log.exists():
                    tail = server.log.read_text(errors="replace")[-2000:]
                    print(f"--- {server.name} log ---\n{tail}", file=sys.stderr)
            raise
        finally:
            for server in servers:
                server.stop()

    seconds = time.time() - started
    meta = report.machine(mode, server_core, client_core, names, seconds, load_before)
    meta["counts"] = (
        f"{counts.passes} passes; per batch {counts.c1} requests at concurrency 1, {counts.c32} "
        f"at 32, {counts.streams} streams, {counts.sleep} `sleep` requests at 100"
    )
    text = report.markdown(results, meta)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmarks.md").write_text(text)
    report.plot(results, out / "img" / "benchmarks.png")
    print(f"wrote {out / 'benchmarks.md'} and {out / 'img' / 'benchmarks.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
