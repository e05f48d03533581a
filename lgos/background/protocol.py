"""The contract between the API and a background engine.

The engine is the only store of background runs: it keeps each job (the validated request and
its owner) and the finished Response JSON. The public Response id embeds the engine's run id,
so any API instance answers for any id without a table of its own.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from lgos.background.events import ResponseEventLog
from lgos.wire import ids

RunStatus = Literal["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled", "incomplete"})


class BackgroundJob(BaseModel):
    """Everything a worker needs to run one background Response. JSON-serializable."""

    model_config = ConfigDict(frozen=True)

    request: dict[str, Any]
    owner_scope: str
    run_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    created_at: int = Field(default_factory=lambda: int(time.time()))
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
    # A turn of a stored conversation (lgos.service.stateful): the items before the input,
    # the index from which the graph receives them as messages, and for a thread-keeping
    # graph the checkpoint to start from.
    history: list[dict[str, Any]] = Field(default_factory=list)
    replay_from: int = 0
    checkpoint_id: str | None = None

    @property
    def model(self) -> str:
        return str(self.request.get("model", ""))


class BackgroundRun(BaseModel):
    """A run as the engine reports it."""

    id: str = Field(pattern=r"^[0-9a-f]{32}$")
    job: BackgroundJob
    status: RunStatus
    response: dict[str, Any] | None = None

    @property
    def response_id(self) -> str:
        return str(ids.RunResponseId(self.job.run_id, self.id))

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


@runtime_checkable
class BackgroundBackend(Protocol):
    async def submit(self, job: BackgroundJob) -> BackgroundRun:
        """Start a run for `job`, or return the existing run for its idempotency key."""
        ...

    async def get(self, run_id: str) -> BackgroundRun | None:
        """The run with this engine id, or None when unknown."""
        ...

    async def cancel(self, run_id: str) -> None:
        """Cancel the run if it is active; a finished run stays as it is."""
        ...


def event_log(backend: BackgroundBackend | None) -> ResponseEventLog | None:
    """The engine's log of streamed Responses; None when it streams nothing (a backend may
    offer one as its `events` attribute)."""
    log = getattr(backend, "events", None)
    return log if isinstance(log, ResponseEventLog) else None


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def request_digest(request: dict[str, Any]) -> str:
    return digest(json.dumps(request, sort_keys=True, separators=(",", ":")))
