"""Background routes: create (queued, or streamed), retrieve (poll or stream) and cancel."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from opentelemetry import propagate
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lgos import context
from lgos.background.events import TERMINAL_EVENTS, ResponseEventLog, frame_event
from lgos.background.executor import placeholder_snapshot
from lgos.background.protocol import (
    BackgroundBackend,
    BackgroundJob,
    BackgroundRun,
    digest,
    event_log,
    request_digest,
)
from lgos.errors import IdempotencyKeyReusedError, InvalidRequestError, NotFoundError
from lgos.http.streaming import EventStreamResponse
from lgos.registry import GraphFeature, GraphRegistry
from lgos.service import responses
from lgos.service.stateful import StatefulResponses
from lgos.wire import ids
from lgos.wire.responses import ResponsesStream
from lgos.wire.responses_request import IDEMPOTENCY_HEADERS, DecodedResponsesRequest
from lgos.wire.sse import named_event

logger = logging.getLogger("lgos.background")

MAX_IDEMPOTENCY_KEY_LENGTH = 255
# While a tail waits for events, how often it asks the engine whether the run has ended.
STATUS_CHECK_SECONDS = 1.0
_TERMINAL_EVENT_FOR_STATUS = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
}


class BackgroundRoutes:
    def __init__(
        self,
        registry: GraphRegistry,
        backend: BackgroundBackend | None,
        scope: Callable[[Request], Awaitable[str]],
        ping_interval: float = 15.0,
        stateful: StatefulResponses | None = None,
    ) -> None:
        self.stateful = stateful
        self.registry = registry
        self.backend = backend
        self.scope = scope
        self.ping_interval = ping_interval
        self.events = event_log(backend)

    async def create(self, request: Request, decoded: DecodedResponsesRequest) -> Response:
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
        scope = await self.scope(request)
        turn = responses.STATELESS
        if self.stateful is not None:
            decoded, turn = await self.stateful.resolve(decoded, scope)
        # Everything the worker would reject for the request itself is rejected here, now.
        prepared = responses.prepare(self.registry, decoded, turn=turn)
        run_id = prepared.plan.run_id or ids.new_hex()
        key = _idempotency_key(request, decoded)
        raw = decoded.body.model_dump(mode="json", exclude_unset=True, exclude={"extra_headers"})
        trace_context: dict[str, str] = {}
        propagate.inject(trace_context)
        job = BackgroundJob(
            request=raw,
            owner_scope=scope,
            run_id=run_id,
            idempotency_key=digest(scope, key) if key else None,
            request_digest=request_digest(raw),
            trace_context=trace_context,
            request_id=context.current().get("request_id"),
            stream=decoded.stream,
            history=list(turn.history),
            replay_from=turn.replay_from,
            checkpoint_id=turn.checkpoint_id,
        )
        run = await self.backend.submit(job)
        if run.job.request_digest != job.request_digest or run.job.owner_scope != scope:
            raise IdempotencyKeyReusedError()
        context.add(response_id=run.response_id, run_id=run.job.run_id)
        if self.stateful is not None and run.job == job:  # a retry found its run indexed
            await self.stateful.remember_background(prepared, scope, run.response_id)
        if not decoded.stream:
            return JSONResponse(self.snapshot(run))
        assert self.events is not None
        # The stream's first two events. A retry that found the run already created keeps
        # the stored ones: the log never replaces an existing sequence number.
        context_ = responses.response_context(decoded, run.response_id)
        await self.events.append(
            run.id, [frame_event(frame) for frame in ResponsesStream(context_).queued()]
        )
        return self._stream(run, self.events, after=-1)

    def _stream(self, run: BackgroundRun, log: ResponseEventLog, after: int) -> Response:
        # A client that leaves stops reading only: the run goes on in the engine.
        return EventStreamResponse(  # type: ignore[return-value]
            self._tail(run, log, after), ping_interval=self.ping_interval
        )

    async def _tail(
        self, run: BackgroundRun, log: ResponseEventLog, after: int
    ) -> AsyncIterator[bytes]:
        """Replay the events after `after`, then follow new ones to the terminal event."""
        assert self.backend is not None
        last = after
        while True:
            events = await log.read(run.id, last)
            for event in events:
                yield named_event(str(event["type"]), event)
                last = int(event["sequence_number"])
                if event["type"] in TERMINAL_EVENTS:
                    return
            if events:
                continue
            current = await self.backend.get(run.id)
            if current is None or current.terminal:
                # The worker writes its terminal event before the engine records the end, so
                # a log still without one here never gets one (cancelled, or its worker lost).
                if await log.read(run.id, last):
                    continue
                yield self._closing_event(current or run, last + 1)
                return
            await log.wait(run.id, last, STATUS_CHECK_SECONDS)

    def _closing_event(self, run: BackgroundRun, sequence: int) -> bytes:
        """A terminal event built from the engine's view of a run whose log has none."""
        snapshot = (
            self.snapshot(run)
            if run.terminal
            else self.snapshot(run.model_copy(update={"status": "failed"}))
        )
        event_type = _TERMINAL_EVENT_FOR_STATUS.get(snapshot["status"], "response.failed")
        return named_event(
            event_type, {"type": event_type, "sequence_number": sequence, "response": snapshot}
        )

    async def retrieve(self, request: Request) -> Response:
        stream = boolean_param(request, "stream")
        after = starting_after_param(request)
        if after is not None and not stream:
            raise InvalidRequestError(
                "'starting_after' is only allowed with 'stream=true'.",
                param="starting_after",
                code="invalid_value",
            )
        # include_obfuscation: accepted and ignored (no obfuscation padding is sent).
        run = await self._owned_run(request)
        if not stream:
            return JSONResponse(self.snapshot(run))
        if not run.job.stream or self.events is None:
            raise InvalidRequestError(
                "You can only start a new stream from a background response if you created "
                "it with stream=true.",
                param="stream",
                code="invalid_value",
            )
        return self._stream(run, self.events, after=-1 if after is None else after)

    async def cancel(self, request: Request) -> Response:
        run = await self._owned_run(request)
        if not run.terminal:
            assert self.backend is not None
            await self.backend.cancel(run.id)
            run = await self.backend.get(run.id) or run
        return JSONResponse(self.snapshot(run))

    async def _owned_run(self, request: Request) -> BackgroundRun:
        response_id = request.path_params["response_id"]
        context.add(response_id=response_id)
        parsed = ids.parse_run_response_id(response_id)
        run = None
        if parsed is not None and self.backend is not None:
            run = await self.backend.get(parsed.nonce)
        # A foreign id is indistinguishable from an unknown one, and so is a deleted one.
        deleted = self.stateful is not None and await self.stateful.store.is_deleted(response_id)
        if (
            deleted
            or run is None
            or run.job.run_id != (parsed.run_id if parsed else None)
            or run.job.owner_scope != await self.scope(request)
        ):
            raise NotFoundError(f"Response with id '{response_id}' not found.", param="response_id")
        return run

    def snapshot(self, run: BackgroundRun) -> dict[str, Any]:
        if run.response is not None and run.status in ("completed", "failed", "incomplete"):
            return run.response
        status = run.status
        if status == "completed":  # finished but the result is missing: report it honestly
            status = "failed"
        return placeholder_snapshot(run.job, run.id, status)


def boolean_param(request: Request, name: str) -> bool:
    value = request.query_params.get(name)
    if value is None or value.lower() == "false":
        return False
    if value.lower() == "true":
        return True
    raise InvalidRequestError(
        f"Invalid '{name}': expected true or false.", param=name, code="invalid_value"
    )


def starting_after_param(request: Request) -> int | None:
    value = request.query_params.get("starting_after")
    if value is None:
        return None
    try:
        after = int(value)
    except ValueError:
        after = -1
    if after < 0:
        raise InvalidRequestError(
            "Invalid 'starting_after': expected a sequence number (an integer, 0 or more).",
            param="starting_after",
            code="invalid_value",
        )
    return after


def _idempotency_key(request: Request, decoded: DecodedResponsesRequest) -> str | None:
    key = None
    for name in IDEMPOTENCY_HEADERS:
        value = request.headers.get(name)
        if value is not None:
            key = value
            break
    if key is None:
        key = decoded.body_idempotency_key
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        raise InvalidRequestError(
            "Invalid 'Idempotency-Key': expected 1 to 255 characters.",
            param="Idempotency-Key",
            code="invalid_value",
        )
    return key
