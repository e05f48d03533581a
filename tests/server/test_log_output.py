"""How `lgos serve`'s handler writes to stdout: the requests' own records, on the event loop,
are held and written together; every other record is written at once after them, so stdout
keeps the records' order."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from lgos.http import request_log
from lgos.server.logging import JSONFormatter, RequestContextFilter, StdoutHandler

pytestmark = pytest.mark.anyio


class Writes(io.StringIO):
    """A stream that keeps each write apart, and can be awaited for the next one."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.written: asyncio.Event | None = None

    def write(self, text: str) -> int:
        self.writes.append(text)
        if self.written is not None:
            self.written.set()
        return len(text)

    def lines(self, write: int) -> list[str]:
        """What each line of one write says: a request record's `n`, else its message."""
        said = [json.loads(line) for line in self.writes[write].splitlines()]
        return [str(line.get("n", line["message"])) for line in said]


@pytest.fixture
def stream() -> Writes:
    return Writes()


def _handler(stream: Writes | io.TextIOBase, flush_seconds: float = 0.1) -> StdoutHandler:
    """The handler as `logging_config` configures it, on a logger of its own."""
    handler = StdoutHandler(stream, flush_seconds=flush_seconds)
    handler.setFormatter(JSONFormatter())
    handler.addFilter(RequestContextFilter())
    logger = logging.getLogger(f"lgos.test_log_output.{id(handler)}")
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


def _request_record(handler: StdoutHandler, n: int, level: int = logging.INFO) -> None:
    """A request's own record, as `log_request` writes it."""
    assert handler.write_fields(level, request_log.logger.name, request_log.MESSAGE, {"n": n})


def _log(handler: StdoutHandler, message: str, level: int = logging.INFO) -> None:
    logging.getLogger(f"lgos.test_log_output.{id(handler)}").log(level, message)


async def test_request_records_on_the_loop_are_written_together_in_their_order(
    stream: Writes,
) -> None:
    handler = _handler(stream, flush_seconds=0.01)
    stream.written = asyncio.Event()
    for n in range(3):
        _request_record(handler, n)
    assert stream.writes == []  # held: nothing is written until the loop runs the flush
    await asyncio.wait_for(stream.written.wait(), timeout=10)
    assert len(stream.writes) == 1
    assert stream.lines(0) == ["0", "1", "2"]


async def test_any_other_record_is_written_at_once_after_the_held_ones(stream: Writes) -> None:
    handler = _handler(stream)
    _request_record(handler, 1)
    _request_record(handler, 2)
    _log(handler, "node.done")  # a graph node's record, an engine's, Uvicorn's
    _request_record(handler, 3, logging.ERROR)  # a 5xx
    assert [stream.lines(write) for write in range(len(stream.writes))] == [
        ["1", "2", "node.done"],
        ["3"],
    ]


async def test_a_request_record_from_another_thread_is_written_at_once(stream: Writes) -> None:
    handler = _handler(stream)
    _request_record(handler, 1)
    await asyncio.to_thread(_request_record, handler, 2)  # from a thread of its own
    assert stream.lines(0) == ["1", "2"]

    # A loop in another thread may end before a flush it scheduled would run.
    async def on_another_loop() -> None:
        _request_record(handler, 3)

    await asyncio.to_thread(asyncio.run, on_another_loop())
    assert stream.lines(1) == ["3"]


def test_without_a_loop_or_holding_every_record_is_written_at_once(stream: Writes) -> None:
    handler = _handler(stream)
    _request_record(handler, 1)
    assert stream.lines(0) == ["1"]

    unheld = Writes()
    handler = _handler(unheld, flush_seconds=0)

    async def on_the_loop() -> None:
        _request_record(handler, 2)

    asyncio.run(on_the_loop())
    assert unheld.lines(0) == ["2"]


async def test_a_full_hold_is_written_at_once(stream: Writes) -> None:
    handler = _handler(stream)
    for n in range(handler.MAX_HELD):
        _request_record(handler, n)
    assert stream.writes == []
    _request_record(handler, handler.MAX_HELD)
    assert len(stream.writes) == 1
    assert stream.lines(0) == [str(n) for n in range(handler.MAX_HELD + 1)]


async def test_flush_writes_what_is_held(stream: Writes) -> None:
    handler = _handler(stream)
    _request_record(handler, 1)
    handler.flush()
    assert stream.lines(0) == ["1"]
    handler.flush()  # nothing more to write
    assert len(stream.writes) == 1


@pytest.mark.timeout(60)
def test_records_held_when_the_process_exits_are_written() -> None:
    # `lgos serve`'s configuration, one request record on a loop, then a normal exit: the
    # record is held when the loop ends, and `logging.shutdown` (at exit) writes it.
    code = (
        "import asyncio, logging, logging.config\n"
        "from lgos.http.request_log import log_request\n"
        "from lgos.server.logging import logging_config\n"
        "logging.config.dictConfig(logging_config(json_output=True))\n"
        "async def main():\n"
        "    log_request('POST', '/v1/responses', 200, 0.0, False)\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=50, check=True
    )
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["message"], record["http.route"]) == ("http.request", "/v1/responses")


def _request_record_in_child(handler: StdoutHandler) -> None:
    async def record() -> None:
        _request_record(handler, 2)
        handler.flush()

    asyncio.run(record())


@pytest.mark.timeout(60)
async def test_a_forked_child_does_not_write_its_parents_held_records(tmp_path: Path) -> None:
    # Hatchet's action listener is forked from a worker whose handler may hold records.
    with (tmp_path / "stdout").open("a") as file:
        handler = _handler(file)
        _request_record(handler, 1)  # held
        child = multiprocessing.get_context("fork").Process(
            target=_request_record_in_child, args=(handler,)
        )
        child.start()
        await asyncio.to_thread(child.join, 50)
        assert child.exitcode == 0
        handler.flush()
    lines = (tmp_path / "stdout").read_text().splitlines()
    assert sorted(json.loads(line)["n"] for line in lines) == [1, 2]
