"""How `lgos serve`'s handler writes records to stdout: INFO records on the event loop are held
and written together, in order; warnings, other threads and exit write what is held first."""

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

    def messages(self, write: int) -> list[str]:
        return [json.loads(line)["message"] for line in self.writes[write].splitlines()]


@pytest.fixture
def stream() -> Writes:
    return Writes()


def _logger(stream: Writes, flush_seconds: float = 0.1) -> tuple[logging.Logger, StdoutHandler]:
    handler = StdoutHandler(stream, flush_seconds=flush_seconds)
    handler.setFormatter(JSONFormatter())
    handler.addFilter(RequestContextFilter())
    logger = logging.getLogger(f"lgos.test_log_output.{id(stream)}")
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, handler


async def test_info_records_on_the_loop_are_written_together_in_their_order(
    stream: Writes,
) -> None:
    logger, _ = _logger(stream, flush_seconds=0.01)
    stream.written = asyncio.Event()
    for number in range(3):
        logger.info(f"record.{number}")
    assert stream.writes == []  # held: nothing written until the loop runs the flush
    await asyncio.wait_for(stream.written.wait(), timeout=10)
    assert len(stream.writes) == 1
    assert stream.messages(0) == ["record.0", "record.1", "record.2"]


async def test_a_warning_writes_what_is_held_before_itself(stream: Writes) -> None:
    logger, _ = _logger(stream)
    logger.info("first")
    logger.info("second")
    logger.warning("third")
    assert len(stream.writes) == 1
    assert stream.messages(0) == ["first", "second", "third"]


async def test_a_record_from_another_thread_is_written_at_once_after_the_held_ones(
    stream: Writes,
) -> None:
    logger, _ = _logger(stream)
    logger.info("on.the.loop")
    await asyncio.to_thread(logger.info, "in.a.thread")  # a sync node's record
    assert len(stream.writes) == 1
    assert stream.messages(0) == ["on.the.loop", "in.a.thread"]


async def test_a_record_on_a_loop_in_another_thread_is_written_at_once(stream: Writes) -> None:
    # Such a loop may end before a flush it scheduled would run.
    logger, _ = _logger(stream)

    async def log() -> None:
        logger.info("other.loop")

    await asyncio.to_thread(asyncio.run, log())
    assert stream.messages(0) == ["other.loop"]


def test_outside_a_loop_and_without_holding_every_record_is_written_at_once(
    stream: Writes,
) -> None:
    logger, _ = _logger(stream)
    logger.info("no.loop")
    assert stream.messages(0) == ["no.loop"]

    unheld = Writes()
    logger, _ = _logger(unheld, flush_seconds=0)

    async def log() -> None:
        logger.info("not.held")

    asyncio.run(log())
    assert unheld.messages(0) == ["not.held"]


async def test_a_full_hold_is_written_at_once(stream: Writes) -> None:
    logger, handler = _logger(stream)
    for number in range(handler.MAX_HELD):
        logger.info(f"record.{number}")
    assert stream.writes == []
    logger.info("one.more")
    assert len(stream.writes) == 1
    written = stream.messages(0)
    assert len(written) == handler.MAX_HELD + 1
    assert written[0] == "record.0"
    assert written[-1] == "one.more"


async def test_flush_writes_what_is_held(stream: Writes) -> None:
    logger, handler = _logger(stream)
    logger.info("held")
    handler.flush()
    assert stream.messages(0) == ["held"]
    handler.flush()  # nothing more to write
    assert len(stream.writes) == 1


@pytest.mark.timeout(60)
def test_records_held_when_the_process_exits_are_written() -> None:
    # `lgos serve` as configured, one INFO record on a loop, then a normal exit: the record is
    # held when the loop ends, and `logging.shutdown` (at exit) writes it.
    code = (
        "import asyncio, logging, logging.config\n"
        "from lgos.server.logging import logging_config\n"
        "logging.config.dictConfig(logging_config(json_output=True))\n"
        "async def main():\n"
        "    logging.getLogger('lgos.test').info('held.at.exit')\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=50, check=True
    )
    assert [json.loads(line)["message"] for line in result.stdout.splitlines()] == ["held.at.exit"]


def _log_in_child(logger: logging.Logger, handler: StdoutHandler) -> None:
    async def log() -> None:
        logger.info("child")
        handler.flush()

    asyncio.run(log())


@pytest.mark.timeout(60)
async def test_a_forked_child_does_not_write_its_parents_held_records(tmp_path: Path) -> None:
    # Hatchet's action listener is forked from a worker whose handler may hold records.
    with (tmp_path / "stdout").open("a") as file:
        handler = StdoutHandler(file)
        handler.setFormatter(JSONFormatter())
        logger = logging.getLogger("lgos.test_log_output.fork")
        logger.handlers = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False
        logger.info("parent")  # held
        child = multiprocessing.get_context("fork").Process(
            target=_log_in_child, args=(logger, handler)
        )
        child.start()
        await asyncio.to_thread(child.join, 50)
        assert child.exitcode == 0
        handler.flush()
    lines = (tmp_path / "stdout").read_text().splitlines()
    assert sorted(json.loads(line)["message"] for line in lines) == ["child", "parent"]
