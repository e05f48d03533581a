"""Triggers of the run task, sent to the engine together while one is on its way.

Each trigger is a gRPC call and, in the engine, a transaction of its own (the idempotency
key's claim, the task, its payload, its match conditions, its OLAP row): in a burst of
creates the engine and its database spent more on triggering LGOS's runs one by one than on
anything else LGOS adds (docs/benchmarks.md, issue 29, tenth round). `BatchedTrigger` sends a
create's trigger at once when none is on its way; creates that come meanwhile wait for it and
go together in one bulk trigger (the SDK's `aio_run_many`, one call and one transaction for
all). A lone create waits for nothing more than before.

A bulk trigger is all or nothing for idempotency: when one of its keys is claimed (a client's
retry, two creates with one key in the same batch), the engine creates the others and names
only the runs it refused. Each create of that batch is then triggered alone: the engine names
the run its key belongs to, whether that run came from this batch or from before, which is the
answer a single trigger would have had.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from hatchet_sdk import BulkTriggerIdempotencyCollisionError

# The most triggers in one call (the SDK splits at 1000; a few dozen already make the
# engine's per-call cost small beside its per-run cost).
MOST_PER_BATCH = 50


class TriggerPort(Protocol):
    """The part of the SDK's `Standalone` task a trigger uses (a test fake provides the same)."""

    async def aio_run(
        self, input: Any = ..., options: Any = ..., *, wait_for_result: Literal[False]
    ) -> Any: ...

    async def aio_run_many(
        self, workflows: list[Any], *, wait_for_result: Literal[False]
    ) -> list[Any]: ...

    def create_bulk_run_item(self, input: Any = ...) -> Any: ...


@dataclass(slots=True)
class _Waiting:
    task_input: Any
    answer: asyncio.Future[Any]


class BatchedTrigger:
    """`await trigger(task_input)` → the engine's run reference (`workflow_run_id`), or what
    the engine raised for it (`IdempotencyCollisionError` naming the run its key belongs to).

    Each call to the engine is bounded by `call_timeout`, so a caller waits at most for the
    call before its own and its own. A caller cancelled before its trigger is sent (its client
    left, its own bound ran out) is left out of the call."""

    def __init__(self, task: TriggerPort, call_timeout: float, *, most: int = MOST_PER_BATCH):
        self.task = task
        self.call_timeout = call_timeout
        self.most = most
        self._waiting: list[_Waiting] = []
        self._sender: asyncio.Task[None] | None = None

    async def __call__(self, task_input: Any) -> Any:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(task_input, answer))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_all())
        return await answer

    async def _send_all(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[: self.most], self._waiting[self.most :]
                batch = [waiting for waiting in batch if not waiting.answer.done()]
                if len(batch) == 1:
                    await _settle(batch[0], self._alone(batch[0]))
                elif batch:
                    await self._together(batch)
        finally:
            self._sender = None

    async def _together(self, batch: list[_Waiting]) -> None:
        items = [self.task.create_bulk_run_item(input=waiting.task_input) for waiting in batch]
        try:
            refs = await asyncio.wait_for(
                self.task.aio_run_many(items, wait_for_result=False), self.call_timeout
            )
        except BulkTriggerIdempotencyCollisionError:
            # The engine names the refused runs by run id, not by input: trigger each create
            # alone (one the bulk created is named by its own key's collision).
            await asyncio.gather(*(_settle(waiting, self._alone(waiting)) for waiting in batch))
            return
        except BaseException as error:
            for waiting in batch:
                _fail(waiting, error)
            if not isinstance(error, Exception):
                raise
            return
        for waiting, ref in zip(batch, refs, strict=True):
            if not waiting.answer.done():
                waiting.answer.set_result(ref)

    async def _alone(self, waiting: _Waiting) -> Any:
        return await asyncio.wait_for(
            self.task.aio_run(waiting.task_input, wait_for_result=False), self.call_timeout
        )


async def _settle(waiting: _Waiting, call: Coroutine[Any, Any, Any]) -> None:
    """`waiting` answered with what `call` returns or raises."""
    try:
        ref = await call
    except BaseException as error:
        _fail(waiting, error)
        if not isinstance(error, Exception):
            raise
        return
    if not waiting.answer.done():
        waiting.answer.set_result(ref)


def _fail(waiting: _Waiting, error: BaseException) -> None:
    if waiting.answer.done():
        return
    if isinstance(error, asyncio.CancelledError):
        waiting.answer.cancel()
    else:
        waiting.answer.set_exception(error)
