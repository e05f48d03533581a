"""Background Responses: submit, retrieve (poll, or replay and tail the stream), cancel.

The engine stores the runs (`BackgroundBackend`); this module decides what may be submitted,
builds the job, and turns what the engine reports into Response objects and stream events.
The worker side (`lgos.background.executor`) runs the job through `service.responses`.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from opentelemetry import propagate

from lgos.core import log_fields
from lgos.core.background import (
    FINAL_RESPONSE_STATUSES,
    FIRST_WORKER_SEQUENCE,
    TERMINAL_EVENT_FOR_STATUS,
    TERMINAL_EVENTS,
    BackgroundBackend,
    BackgroundJob,
    BackgroundRun,
    ResponseEventLog,
    ResponseStatus,
    digest,
    event_log,
    logged_end,
    request_digest,
    results_in_log,
)
from lgos.core.errors import IdempotencyKeyReusedError, InvalidRequestError, NotFoundError
from lgos.core.registry import GraphFeature, GraphRegistry
from lgos.service import responses
from lgos.service.recent_runs import RecentRuns
from lgos.service.stateful import StatefulResponses
from lgos.wire import ids
from lgos.wire.responses_decoder import DecodedResponsesRequest
from lgos.wire.responses_encoder import ResponseEcho, ResponsesStream, failure
from lgos.wire.types.events import ResponseLifecycleEvent, StreamEvent, as_events
from lgos.wire.types.responses import ResponseObject, as_response

# While a tail waits for events, how often it asks the engine whether the run has ended.
STATUS_CHECK_SECONDS = 1.0
# The same on an engine whose workers log every run's start and end (Hatchet), for tails and
# for the polls' background re-reads (`RecentRuns`): the log has every end but those only the
# engine knows of (a cancel from its own dashboard, a run it gave up on), and each question is
# a REST read that costs the engine and its database more than the rest of a short run's
# stream (issue 29: about 6 ms of CPU per streamed run in a burst, where runs wait a second
# or more, at one question a second).
LOGGED_RUN_CHECK_SECONDS = 5.0


class Unread(enum.Enum):
    """A log not read yet (`BackgroundResponses.retrieve`'s `last`: None is a log read and
    found empty)."""

    UNREAD = enum.auto()


UNREAD = Unread.UNREAD


def response_id(run: BackgroundRun) -> str:
    """The public id: the job's run id and the engine's, so any instance can answer for it."""
    return str(ids.RunResponseId(run.job.run_id, run.id))


def snapshot(run: BackgroundRun) -> ResponseObject:
    """The Response for a run: the stored one once it finished, else one built from the job."""
    if run.response is not None and run.status in FINAL_RESPONSE_STATUSES:
        return as_response(run.response)
    status: ResponseStatus = run.status
    if status == "completed":  # finished but the result is missing: report it honestly
        status = "failed"
    echo = _echo(run)
    if status == "failed":
        return echo.snapshot("failed", error=failure())
    return echo.snapshot(status)


def _echo(run: BackgroundRun) -> ResponseEcho:
    return responses.job_echo(run.job.echo, response_id(run))


def new_job(
    prepared: responses.PreparedResponse,
    decoded: DecodedResponsesRequest,
    *,
    owner_scope: str,
    idempotency_key: str | None = None,
) -> BackgroundJob:
    """The job an engine stores for a prepared background request, as the worker will run
    it (its run id names the checkpoint thread of a durable worker)."""
    raw = decoded.body.model_dump(mode="json", exclude_unset=True, exclude={"extra_headers"})
    trace_context: dict[str, str] = {}
    propagate.inject(trace_context)
    return BackgroundJob(
        prepared=prepared.to_job(),
        owner_scope=owner_scope,
        run_id=prepared.plan.run_id or ids.new_hex(),
        idempotency_key=digest(owner_scope, idempotency_key) if idempotency_key else None,
        request_digest=request_digest(raw),
        trace_context=trace_context,
        request_id=log_fields.current().get("request_id"),
        stream=decoded.stream,
    )


class BackgroundResponses:
    """The background use cases over one registry and engine (None: background disabled)."""

    def __init__(
        self,
        registry: GraphRegistry,
        backend: BackgroundBackend | None,
        stateful: StatefulResponses | None = None,
    ) -> None:
        self.registry = registry
        self.backend = backend
        # Stored Responses: a background turn continues a stored conversation and is indexed
        # in the store (None: background Responses stand alone).
        self.stateful = stateful
        self.events = event_log(backend)
        # The engine's last word on the runs this process was polled about (`_poll_with_log`).
        self.recent = RecentRuns(LOGGED_RUN_CHECK_SECONDS)

    async def create(
        self, decoded: DecodedResponsesRequest, *, owner_scope: str, idempotency_key: str | None
    ) -> ResponseObject:
        """Submit a run created without `stream`: its queued Response."""
        run, _, new, _ = await self._submit(
            decoded, owner_scope=owner_scope, idempotency_key=idempotency_key
        )
        # A retry shows the run as a poll would (its end may be in the log already).
        return snapshot(run) if new else await self._polled(run)

    async def create_stream(
        self, decoded: DecodedResponsesRequest, *, owner_scope: str, idempotency_key: str | None
    ) -> AsyncGenerator[StreamEvent]:
        """Submit a run created with `stream`: its stream's events, replayed and tailed."""
        run, _, new, opening = await self._submit(
            decoded, owner_scope=owner_scope, idempotency_key=idempotency_key
        )
        assert self.events is not None
        if not new:
            return self._tail(run, self.events, after=-1)
        # A new run's log began with exactly these (only this request writes before the
        # worker's first): its stream sends them as they are, and reads the log after them.
        return self._tail(run, self.events, after=-1, opening=opening)

    async def _submit(
        self, decoded: DecodedResponsesRequest, *, owner_scope: str, idempotency_key: str | None
    ) -> tuple[BackgroundRun, responses.PreparedResponse, bool, list[StreamEvent]]:
        """Check, submit and index a run: the run, the prepared request, whether the run is
        new (not one an earlier request with the same idempotency key created), and for a
        streamed run its stream's first events, logged."""
        model = decoded.body.model
        config = self.registry.get(model)
        if self.backend is None:
            raise InvalidRequestError(
                "Background responses are not enabled on this server.",
                param="background",
                code="unsupported_value",
            )
        if not config.supports(GraphFeature.BACKGROUND):
            raise InvalidRequestError(
                f"The model '{model}' does not run in the background.",
                param="background",
                code="unsupported_value",
            )
        if decoded.stream and self.events is None:
            raise InvalidRequestError(
                "This server's background engine cannot stream: omit 'stream' and poll.",
                param="stream",
                code="unsupported_value",
            )
        # A background Response is always kept, by the engine (the decoder refuses
        # store=false), so its echo says so from the first snapshot on.
        turn = responses.Turn(store=True)
        if self.stateful is not None:
            decoded, turn = await self.stateful.resolve(decoded, owner_scope)
        # Everything the worker would reject for the request itself is rejected here, now,
        # and the job holds the result: the worker neither decodes nor prepares it again.
        prepared = responses.prepare(self.registry, decoded, turn=turn)
        job = new_job(prepared, decoded, owner_scope=owner_scope, idempotency_key=idempotency_key)
        run = await self.backend.submit(job)
        if run.job.request_digest != job.request_digest or run.job.owner_scope != owner_scope:
            raise IdempotencyKeyReusedError()
        log_fields.add(response_id=response_id(run), run_id=run.job.run_id)
        if results_in_log(self.backend):
            self.recent.remember(run)  # its polls here need not ask the engine for the job
        # Index a new run only: a retry that found its run (another job) was indexed already.
        # Compared as JSON, the form in which an engine stores and returns the job.
        new = run.job.model_dump(mode="json") == job.model_dump(mode="json")
        # A streamed run's first two events. A retry that found the run already created
        # keeps the stored ones: the log never replaces an existing sequence number.
        opening: list[StreamEvent] = []
        if decoded.stream:
            opening = ResponsesStream(prepared.with_response_id(response_id(run)).echo).queued()
        with_record = False
        if self.stateful is not None and new:
            # Logged with the record, in one write, where the store's log is the engine's.
            with_record = bool(opening) and self.stateful.store.events is self.events
            await self.stateful.remember_background(
                prepared, owner_scope, response_id(run), (run.id, opening) if with_record else None
            )
        if opening and not with_record:
            assert self.events is not None
            await self.events.append(run.id, opening)
        return run, prepared, new, opening

    def logs_in(self, log: ResponseEventLog) -> bool:
        """Whether polls read this engine's runs from `log` (`_poll_with_log`): then a caller
        that reads `log` along with the store (one statement) passes what it read as `last`."""
        return results_in_log(self.backend) and self.events is log

    async def retrieve(
        self,
        response_id: str,
        *,
        owner_scope: str,
        indexed: bool = False,
        last: Mapping[str, Any] | Unread | None = UNREAD,
    ) -> ResponseObject:
        """A poll. `indexed`: the caller found this id in the store under this owner, so it
        was not deleted (a delete removes the record and marks the id in one transaction).
        `last`: the run's last logged event, when the caller read it with the record."""
        parsed = ids.parse_run_response_id(response_id)
        if indexed and parsed is not None and results_in_log(self.backend):
            return await self._poll_with_log(response_id, parsed.nonce, owner_scope, last)
        return await self._polled(await self._owned_run(response_id, owner_scope, indexed=indexed))

    async def stream(
        self,
        response_id: str,
        *,
        owner_scope: str,
        starting_after: int | None,
        indexed: bool = False,
    ) -> AsyncGenerator[StreamEvent]:
        """A streamed run's events after `starting_after`, replayed then tailed to its end."""
        run = await self._owned_run(response_id, owner_scope, indexed=indexed)
        if not run.job.stream or self.events is None:
            raise InvalidRequestError(
                "You can only start a new stream from a background response if you created "
                "it with stream=true.",
                param="stream",
                code="invalid_value",
            )
        return self._tail(run, self.events, after=-1 if starting_after is None else starting_after)

    async def cancel(
        self, response_id: str, *, owner_scope: str, indexed: bool = False
    ) -> ResponseObject:
        run = await self._owned_run(response_id, owner_scope, indexed=indexed)
        if run.terminal:
            return snapshot(run)
        # A worker logs a run's end before its engine records it: a run whose end is logged
        # has finished (polls show that end), and cancelling it now would give this answer,
        # and the engine, an end the run never had.
        ended = await logged_end(run, self.backend)
        if ended is not None:
            return as_response(ended)
        assert self.backend is not None
        await self.backend.cancel(run.id)
        run = await self.backend.get(run.id, exists=True) or run
        ended = await self._log_cancel(run)
        return as_response(ended) if ended is not None else snapshot(run)

    async def _log_cancel(self, run: BackgroundRun) -> Mapping[str, Any] | None:
        """On an engine whose polls read a run's end from the log, log a cancel's end too, so
        a poll on any API instance shows it at once. Only when the log has no end: a worker
        that ended the run first keeps its end, which is returned (as polls show it), and a
        later one never replaces this one: the log keeps the first event of each sequence
        number, and a worker's next is this."""
        log = self.events
        if not results_in_log(self.backend) or log is None or run.status != "cancelled":
            return None
        self.recent.remember(run)
        last = await log.last(run.id)
        if last is not None and last.get("type") in TERMINAL_EVENTS:
            ended: Mapping[str, Any] = last["response"]
            return ended
        after = int(last["sequence_number"]) if last is not None else FIRST_WORKER_SEQUENCE - 1
        # The event a stream of the run closes with (`_tail`), written once for every reader.
        await log.append(run.id, [_closing_event(run, max(after + 1, FIRST_WORKER_SEQUENCE))])
        return None

    async def _polled(self, run: BackgroundRun) -> ResponseObject:
        """A poll shows what the stream ended with as soon as the stream ended: a worker
        writes a streamed run's terminal event before its engine records the end (Hatchet's
        REST view of a run lags the engine by a second or more). On an engine whose workers
        log every run's end, the same holds for a run without a stream."""
        ended = await logged_end(run, self.backend)
        return as_response(ended) if ended is not None else snapshot(run)

    async def _poll_with_log(
        self,
        response_id: str,
        run_id: str,
        owner_scope: str,
        last: Mapping[str, Any] | Unread | None = UNREAD,
    ) -> ResponseObject:
        """A poll on an engine whose workers log every run's end (Hatchet), for an id the
        store holds under the caller's owner (which proves the run is theirs).

        The log answers first: a run's end (a worker's, or a cancel's), and whether a worker
        started it. The engine is read only for what the log cannot say (`RecentRuns`): the
        first poll of a run this process did not create reads it, and the view is read again
        in the background at most every `LOGGED_RUN_CHECK_SECONDS`, for an end only the
        engine knows. (Hatchet's REST view shows a run's end a second or more late, and each read of
        it costs the engine a query and the API a thread; polls used to read it every time. The
        background reads ask for the status alone: the job is known.)
        """
        log = self.events
        assert log is not None  # results_in_log
        if isinstance(last, Unread):
            last = await log.last(run_id)
        if last is not None and last.get("type") in TERMINAL_EVENTS:
            self.recent.forget(run_id)
            return as_response(last["response"])
        known = self.recent.get(run_id)
        if known is None:
            return await self._first_poll(response_id, run_id, owner_scope, last)
        backend = self.backend
        assert backend is not None
        # The job is known: the engine need only say the status.
        self.recent.read_again_if_old(run_id, lambda: backend.get(run_id, known=known))
        return _as_logged(known, last)

    async def _first_poll(
        self, response_id: str, run_id: str, owner_scope: str, last: Mapping[str, Any] | None
    ) -> ResponseObject:
        """The first poll of a run in this process: whichever answers first, the engine or
        the log (woken by its notification), as the engine's view of a new run lags."""
        log = self.events
        assert log is not None
        engine = asyncio.ensure_future(self._owned_run(response_id, owner_scope, indexed=True))
        try:
            while True:
                if last is not None and last.get("type") in TERMINAL_EVENTS:
                    return as_response(last["response"])
                if engine.done():
                    break
                after = int(last["sequence_number"]) if last is not None else -1
                woken = asyncio.ensure_future(log.wait(run_id, after, STATUS_CHECK_SECONDS))
                try:
                    await asyncio.wait({engine, woken}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
                if not engine.done():
                    last = await log.last(run_id)
            run = engine.result()
            self.recent.remember(run)
            return await self._polled(run)
        finally:
            # Answered by the log: the engine's read is not needed any more (and a failure it
            # had meanwhile is moot).
            engine.cancel()
            if engine.done() and not engine.cancelled():
                engine.exception()

    async def _owned_run(
        self, response_id: str, owner_scope: str, *, indexed: bool = False
    ) -> BackgroundRun:
        log_fields.add(response_id=response_id)
        parsed = ids.parse_run_response_id(response_id)
        store = self.stateful.store if self.stateful is not None else None
        run = None
        if parsed is not None and self.backend is not None:
            # An id the store indexes under this owner is a run the engine has, which a
            # lagging engine waits for (`exists`); any other id is read once, so that an
            # unknown one is a prompt 404.
            run = await self.backend.get(parsed.nonce, exists=indexed)
            # A caller that did not look in the store (an agent protocol's task): look now.
            if (
                run is None
                and not indexed
                and store is not None
                and await store.get_response(response_id, owner_scope) is not None
            ):
                run = await self.backend.get(parsed.nonce, exists=True)
        # A foreign id is indistinguishable from an unknown one, and so is a deleted one.
        if run is not None and not indexed and store and await store.is_deleted(response_id):
            run = None
        if (
            run is None
            or run.job.run_id != (parsed.run_id if parsed else None)
            or run.job.owner_scope != owner_scope
        ):
            raise NotFoundError(f"Response with id '{response_id}' not found.", param="response_id")
        return run

    async def _tail(
        self,
        run: BackgroundRun,
        log: ResponseEventLog,
        after: int,
        opening: list[StreamEvent] | None = None,
    ) -> AsyncGenerator[StreamEvent]:
        """Replay the events after `after`, then follow new ones to the terminal event.
        `opening`: the log's first events, known to the caller, sent without reading them.

        The log is read again only when it may have more: the tail's waiter (`log.follow`)
        is in place before the first read, so a log that hears of its appends wakes it for
        each, and a wait needs no read of its own. The engine is asked whether the run ended
        at most every `STATUS_CHECK_SECONDS`, not after every event. On an engine whose
        workers log every run's end (and whose cancels log theirs, `_log_cancel`), at most
        every `LOGGED_RUN_CHECK_SECONDS`, the first question after that long too, for the
        status alone (the run is known): a run that ends within those seconds costs its
        stream no read of the engine. Elsewhere the first is asked at once.
        """
        assert self.backend is not None
        loop = asyncio.get_running_loop()
        last = after
        logged = results_in_log(self.backend)
        interval = LOGGED_RUN_CHECK_SECONDS if logged else STATUS_CHECK_SECONDS
        next_check = loop.time() + (interval if logged else 0.0)
        with log.follow(run.id) as waiter:
            # None: what follows `last` is for a read of the log to say.
            events: list[StreamEvent] | None = opening or None
            while True:
                if events is None:
                    events = as_events(await log.read(run.id, last))
                for event in events:
                    yield event
                    last = int(event["sequence_number"])
                    if event["type"] in TERMINAL_EVENTS:
                        return
                if not events and loop.time() >= next_check:
                    # The run exists (created or read just now): a view that does not show
                    # it yet is waited for, not taken for a run that is gone.
                    current = await self.backend.get(
                        run.id, exists=True, known=run if logged else None
                    )
                    if current is None or current.terminal:
                        # The worker writes its terminal event before the engine records the
                        # end, so a log still without one here never gets one (cancelled, or
                        # its worker lost).
                        events = as_events(await log.read(run.id, last))
                        if events:
                            continue
                        yield _closing_event(current or run, last + 1)
                        return
                    next_check = loop.time() + interval
                heard = await waiter.wait(last, max(0.0, next_check - loop.time()))
                events = None if heard is None else as_events(heard)


def _as_logged(run: BackgroundRun, last: Mapping[str, Any] | None) -> ResponseObject:
    """The Response of a run whose log has no end, as the engine last saw it, or in progress
    when a worker has logged its start since (`last`: the log's last event)."""
    started = last is not None and int(last["sequence_number"]) >= FIRST_WORKER_SEQUENCE
    if started and not run.terminal:
        run = run.model_copy(update={"status": "in_progress"})
    return snapshot(run)


def _closing_event(run: BackgroundRun, sequence: int) -> ResponseLifecycleEvent:
    """A terminal event built from the engine's view of a run whose log has none."""
    closing = snapshot(run if run.terminal else run.model_copy(update={"status": "failed"}))
    event_type = TERMINAL_EVENT_FOR_STATUS.get(closing["status"], "response.failed")
    return {"type": event_type, "sequence_number": sequence, "response": closing}
