"""An engine in the API process, and its event log: for trials and tests. Runs die with the
process."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from lgos.background import webhooks
from lgos.background.executor import execute_background_job
from lgos.core.background import BackgroundJob, BackgroundRun
from lgos.core.event_log import InMemoryResponseEventLog
from lgos.core.registry import GraphRegistry
from lgos.core.webhooks import Delivery, WebhookSettings
from lgos.wire import ids

logger = logging.getLogger("lgos.background")


class InMemoryBackgroundBackend:
    """Runs each job as an asyncio task of this process.

    Enter `lifespan(app)` in the application's lifespan so unfinished runs are cancelled on
    shutdown instead of being left to the garbage collector.
    """

    # Capabilities (`BackgroundBackend`): it streams, into `events`; a run's end is known here
    # the moment it happens, so nothing else needs logging.
    results_in_log = False

    def __init__(self, registry: GraphRegistry, webhooks: WebhookSettings | None = None) -> None:
        self.registry = registry
        self.webhooks = webhooks
        # Webhook deliveries under way: a retry loop each, in this process (they die with it).
        self._deliveries: set[asyncio.Task[bool]] = set()
        self._runs: dict[str, BackgroundRun] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._by_key: dict[str, str] = {}
        # Streamed Responses' events, for their creator and later readers.
        self.events = InMemoryResponseEventLog()

    @asynccontextmanager
    async def lifespan(self, app: Any = None) -> AsyncIterator[None]:
        try:
            yield
        finally:
            tasks: list[asyncio.Task[Any]] = [*self._tasks.values(), *self._deliveries]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def submit(self, job: BackgroundJob) -> BackgroundRun:
        if job.idempotency_key is not None and job.idempotency_key in self._by_key:
            return self._runs[self._by_key[job.idempotency_key]]
        run_id = uuid.uuid4().hex
        run = BackgroundRun(id=run_id, job=job, status="queued")
        self._runs[run_id] = run
        if job.idempotency_key is not None:
            self._by_key[job.idempotency_key] = run_id
        # A fresh context, as in a worker process: the run must not inherit the creating
        # request's log fields or trace; what it needs travels in the job.
        self._tasks[run_id] = asyncio.create_task(
            self._execute(run_id, job), context=contextvars.Context()
        )
        return run

    async def get(
        self, run_id: str, *, exists: bool = False, known: BackgroundRun | None = None
    ) -> BackgroundRun | None:
        return self._runs.get(run_id)  # no lag and no cost: `exists` and `known` change nothing

    async def cancel(self, run_id: str) -> None:
        task = self._tasks.get(run_id)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            # A task cancelled before it first ran never reached its own handlers.
            self._tasks.pop(run_id, None)
            if not self._runs[run_id].terminal:
                self._set(run_id, status="cancelled")
                self._notify(run_id, None, cancelled=True)

    def _set(self, run_id: str, **changes: Any) -> None:
        self._runs[run_id] = self._runs[run_id].model_copy(update=changes)

    async def _execute(self, run_id: str, job: BackgroundJob) -> None:
        # Let the create request answer `queued` before the run starts.
        await asyncio.sleep(0)
        self._set(run_id, status="in_progress")
        try:
            response = await execute_background_job(job, run_id, self.registry, events=self.events)
        except asyncio.CancelledError:
            self._set(run_id, status="cancelled")
            self._notify(run_id, None, cancelled=True)
            raise
        except Exception:  # execute_background_job turns graph errors into failed Responses
            logger.exception("background.run_crashed")
            self._set(run_id, status="failed")
            self._notify(run_id, {"status": "failed"})
        else:
            self._set(run_id, status=response["status"], response=response)
            self._notify(run_id, response)
        finally:
            self._tasks.pop(run_id, None)

    def _notify(
        self, run_id: str, response: Mapping[str, Any] | None, *, cancelled: bool = False
    ) -> None:
        """Start the webhook deliveries of a run that ended; the run does not wait for them."""
        if self.webhooks is None:
            return
        job = self._runs[run_id].job
        if cancelled:
            found = webhooks.for_cancelled(self.webhooks, job, run_id)
        else:
            response_id = str(ids.RunResponseId(job.run_id, run_id))
            found = webhooks.for_end(self.webhooks, response_id, response)
        for delivery in found:
            self._start_delivery(delivery)

    def _start_delivery(self, delivery: Delivery) -> None:
        assert self.webhooks is not None
        task = asyncio.create_task(
            webhooks.deliver(self.webhooks, delivery), context=contextvars.Context()
        )
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)
