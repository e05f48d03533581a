"""Background runs as LGOS and every engine see them: the job, the run, the engine protocol,
the event log protocol, and the statuses.

The engine is the only store of background runs: it keeps each job (the validated request and
its owner) and the finished Response JSON. The public Response id embeds the engine's run id,
so any API instance answers for any id without a table of its own.

These contracts sit in the core, not in `lgos.background`, because both sides need them: the
service layer submits, reads and cancels through them, and the engines (`lgos.background`,
`lgos.integrations.*`) implement them and call the service layer to execute a job.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lgos.core.job import JobEcho, PreparedJob

# The statuses of a Response, which are also those of a background run: the one source of
# these names (the wire's types and every status set below are built on it).
ResponseStatus = Literal["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]
# The stream events that end a Response (`response.cancelled` is not one OpenAI sends).
TerminalEventType = Literal["response.completed", "response.failed", "response.incomplete"]
# The stream event that ends a Response of each final status.
TERMINAL_EVENT_FOR_STATUS: Mapping[ResponseStatus, TerminalEventType] = {
    "completed": "response.completed",
    "failed": "response.failed",
    "incomplete": "response.incomplete",
}
TERMINAL_EVENTS: frozenset[TerminalEventType] = frozenset(TERMINAL_EVENT_FOR_STATUS.values())
# A Response an engine stores as a run's result ends in one of these.
FINAL_RESPONSE_STATUSES: frozenset[ResponseStatus] = frozenset(TERMINAL_EVENT_FOR_STATUS)
# A run in one of these has ended: it will never change again (and its Response reports usage).
TERMINAL_STATUSES: frozenset[ResponseStatus] = FINAL_RESPONSE_STATUSES | {"cancelled"}
# A run in one of these has not ended yet.
PENDING_STATUSES: frozenset[ResponseStatus] = frozenset({"queued", "in_progress"})


def engine_statuses(**ours: Iterable[str]) -> dict[str, ResponseStatus]:
    """An engine's own status names → ours: `engine_statuses(queued=["ENQUEUED"], ...)`."""
    statuses: dict[str, ResponseStatus] = {}
    for status, names in ours.items():
        if status not in TERMINAL_STATUSES | PENDING_STATUSES:
            raise ValueError(f"{status!r} is not a Response status")
        statuses.update(dict.fromkeys(names, status))
    return statuses


# The first sequence number a worker writes: 0 and 1 are the API's created and queued events.
FIRST_WORKER_SEQUENCE = 2


class LegacyJob(BaseModel):
    """A job stored before job format 2, which carried the raw request body for the worker to
    decode again. Polls still show its run (its echo is kept); a worker does not run it, and
    its Response fails with `LEGACY_JOB_MESSAGE` (see docs/design-choices.md)."""

    model_config = ConfigDict(frozen=True)

    format: Literal[1] = 1
    echo: JobEcho


LEGACY_JOB_MESSAGE = (
    "This background response was queued by an earlier version of the server, whose jobs "
    "this worker no longer runs. Create the response again."
)

# What a job keeps besides the prepared request; a legacy job is read with these and its echo.
_ENVELOPE = (
    "owner_scope",
    "run_id",
    "idempotency_key",
    "request_digest",
    "trace_context",
    "request_id",
    "stream",
)


class BackgroundJob(BaseModel):
    """One background Response as its engine stores it: the prepared request (`PreparedJob`,
    built once by the API) and who asked for it. JSON-serializable; a worker runs it and a
    poll renders it without decoding the request again."""

    model_config = ConfigDict(frozen=True)

    prepared: PreparedJob | LegacyJob = Field(discriminator="format")
    owner_scope: str
    # The job's id in the public Response id, and its checkpoint thread in a durable worker.
    run_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    # SHA-256 of owner scope + client key: the only form of the key that leaves the API.
    idempotency_key: str | None = None
    # SHA-256 of the canonical request body, to refuse a reused key with another body.
    request_digest: str = ""
    # W3C trace context of the creating request, so the worker's workflow span joins its trace.
    trace_context: dict[str, str] = Field(default_factory=dict)
    # The creating request's id, carried onto the worker's log records.
    request_id: str | None = None
    # Created with `stream: true`: the worker writes its SSE events to the Response's event log.
    stream: bool = False

    @model_validator(mode="before")
    @classmethod
    def _read_legacy(cls, data: Any) -> Any:
        """A job of the earlier shape (`request`: the raw body) becomes a `LegacyJob`."""
        if not isinstance(data, Mapping) or "prepared" in data:
            return data
        raw = data.get("request")
        if not isinstance(raw, Mapping):
            return data
        echo = dict(data.get("echo") or _echo_of_body(raw))
        if "created_at" in data:
            echo.setdefault("created_at", data["created_at"])
        kept = {key: data[key] for key in _ENVELOPE if key in data}
        return {**kept, "prepared": {"format": 1, "echo": echo}}

    @property
    def echo(self) -> JobEcho:
        return self.prepared.echo

    @property
    def created_at(self) -> int:
        return self.prepared.echo.created_at

    @property
    def model(self) -> str:
        return self.prepared.echo.model


def _echo_of_body(body: Mapping[str, Any]) -> dict[str, object]:
    """The echo of a job so old that it kept none: the plain fields of its request body."""
    echo: dict[str, object] = {"model": str(body.get("model", "")), "background": True}
    echo["store"] = True
    for name in ("instructions", "previous_response_id", "user"):
        if isinstance(body.get(name), str):
            echo[name] = body[name]
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        echo["metadata"] = {str(key): str(value) for key, value in metadata.items()}
    return echo


class BackgroundRun(BaseModel):
    """A run as the engine reports it."""

    id: str = Field(pattern=r"^[0-9a-f]{32}$")
    job: BackgroundJob
    status: ResponseStatus
    # The engine's output: the Response JSON a worker returned, read back and not validated
    # again (the service layer reads it as the wire's `ResponseObject`).
    response: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def with_output(self, output: Any) -> BackgroundRun:
        """The run with the Response a finished engine task returned. A task reports
        `completed` however its graph ended; the Response says how (completed, failed, ...)."""
        if self.status == "completed" and isinstance(output, Mapping):
            reported = output.get("status")
            if reported in FINAL_RESPONSE_STATUSES:
                return self.model_copy(update={"status": reported, "response": dict(output)})
        return self


@runtime_checkable
class BackgroundBackend(Protocol):
    """A background engine: the only store of background runs, and what runs them.

    An engine must:

    - keep each submitted `BackgroundJob` as its run's input and, once a worker returns it,
      the final Response JSON as its output, readable from any API instance by the engine's
      run id (32 hex digits, part of the public Response id);
    - start one run per idempotency key: a `submit` whose key is taken returns the run that
      has it (the caller compares the stored job's digest to refuse another body);
    - run each job through the executor (`lgos.background.executor`), which reads only the
      job; a durable engine runs it again when its worker dies (the executor then continues
      it from its last checkpoint);
    - report its own statuses as ours (`engine_statuses`), and cancel an active run.

    What an engine offers beyond that it declares in the two properties below, which every
    engine sets (plain attributes will do); the service layer reads them and never probes.
    """

    @property
    def events(self) -> ResponseEventLog | None:
        """The event log of streamed Responses, in which workers write each event as they
        produce it (streaming, and replay from any sequence number). None: this engine cannot
        stream, and `stream` with `background` is refused."""
        ...

    @property
    def results_in_log(self) -> bool:
        """Whether polls should read a run's end, and its start, from the log first and ask
        the engine only now and then (`service.recent_runs`): for an engine whose own view of
        a run lags, or costs it a query per poll, and whose workers log the end of every run,
        streamed or not, before the engine records it. Meaningful only with `events`."""
        ...

    async def submit(self, job: BackgroundJob) -> BackgroundRun:
        """Start a run for `job`, or return the existing run for its idempotency key."""
        ...

    async def get(
        self, run_id: str, *, exists: bool = False, known: BackgroundRun | None = None
    ) -> BackgroundRun | None:
        """The run with this engine id, or None when unknown: promptly for an id the engine
        does not know.

        `exists`: the caller knows the engine has this run (the engine named it, or the store
        indexes it under the caller). An engine whose view of a new run lags waits for it,
        within its bound on an engine call; an engine without lag ignores it.

        `known`: the caller's last view of this run, which holds its job. An engine whose
        whole view costs more than its status may read the status only and return `known`
        with it (a completed run still comes with its Response); while its view does not show
        the run, it returns `known` as it is. Other engines ignore it.
        """
        ...

    async def cancel(self, run_id: str) -> None:
        """Cancel the run if it is active; a finished run stays as it is."""
        ...


class EventWaiter(Protocol):
    """One reader's wait for a run's next events (`ResponseEventLog.follow`)."""

    async def wait(self, after: int, patience: float) -> list[Mapping[str, Any]] | None:
        """Return when an event after `after` (the reader's last) may be there, or after
        `patience` seconds: with the events after `after`, in order, when the log knows
        them without a read (a notification carried them; empty: nothing new), else None
        (the reader reads the log)."""
        ...


@runtime_checkable
class ResponseEventLog(Protocol):
    """The event log of streamed background Responses: what a client replays and tails.

    A background Response created with `stream: true` keeps every stream event it emitted, in
    sequence order, so the creating client and any later `GET /v1/responses/{id}?stream=true`
    read the same events from any API instance. The API appends `response.created` and
    `response.queued` (sequence numbers 0 and 1) when it submits a new run; the worker appends
    the rest, from `response.in_progress` to the terminal event. Logs are keyed by the engine
    run id (the part of the Response id the engine knows).
    """

    # Events are JSON objects to the log: the wire's `StreamEvent`s going in, read back as
    # they were stored (the service layer reads them as those types again).

    async def append(self, run_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        """Store events (each with its `sequence_number`); a number already stored is kept."""
        ...

    async def read(self, run_id: str, after: int = -1) -> list[Mapping[str, Any]]:
        """The events with `sequence_number > after`, in order."""
        ...

    async def read_or_start(
        self, run_id: str, after: int, first: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        """The events with `sequence_number > after`, in order, as they were; when there are
        none, `first` is stored (what `read`, then `append` when it found nothing, do, in one
        round trip where the log has them). A worker's first step on a run it holds."""
        ...

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        """Return when an event after `after` may be there, or after `patience` seconds."""
        ...

    def follow(self, run_id: str) -> AbstractContextManager[EventWaiter]:
        """A waiter for one reader of the run's events, entered before its first read and
        held until its last: a log that hears of its appends can then tell, without reading,
        that nothing was appended since the reader's last read (a tail's every wake)."""
        ...

    async def last(self, run_id: str) -> Mapping[str, Any] | None:
        """The event with the highest sequence number, or None when there is none."""
        ...

    async def delete(self, run_ids: Iterable[str]) -> None:
        """Forget the events of these runs (retention)."""
        ...


def event_log(backend: BackgroundBackend | None) -> ResponseEventLog | None:
    """The engine's log of streamed Responses; None without an engine or when it streams
    nothing."""
    return backend.events if backend is not None else None


def results_in_log(backend: BackgroundBackend | None) -> bool:
    """Whether the engine's workers log the end of every run, not only of streamed runs."""
    return backend is not None and backend.events is not None and backend.results_in_log


async def logged_end(
    run: BackgroundRun, backend: BackgroundBackend | None
) -> Mapping[str, Any] | None:
    """The final Response in the log of a run its engine still reports unfinished, if any.

    A worker logs a run's end before its engine records it: a streamed run's terminal event
    on every engine, and every run's in `lgos worker` (where the end is logged before the
    run lease is released, and before the run's webhooks are sent). Polls, chained requests
    and conversations read it, so they agree with a stream that already ended, and a client
    told of the end by a webhook finds it when it asks.
    """
    log = event_log(backend)
    if run.terminal or log is None:
        return None
    last = await log.last(run.id)
    if last is None or last.get("type") not in TERMINAL_EVENTS:
        return None
    response: Mapping[str, Any] = last["response"]
    return response


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def request_digest(request: Mapping[str, Any]) -> str:
    return digest(json.dumps(request, sort_keys=True, separators=(",", ":")))
