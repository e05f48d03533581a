"""OpenTelemetry for graph executions: an `invoke_workflow {model}` span and a histogram.

Only the OpenTelemetry API is used; nothing is recorded until the host installs an SDK (for
example with `opentelemetry-instrument lgos serve ...`).
"""

from __future__ import annotations

import timeit
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import NonRecordingSpan, SpanKind, Status, StatusCode

_SCOPE = "lgos"
_tracer = trace.get_tracer(_SCOPE)
_meter = metrics.get_meter(_SCOPE)
_duration = _meter.create_histogram(
    "gen_ai.invoke_workflow.duration",
    unit="s",
    description="Duration of a graph execution",
    explicit_bucket_boundaries_advisory=[1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200],
)


def error_type(error: BaseException) -> str:
    """The exception's qualified name, builtins unqualified (as the GenAI utilities do)."""
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class Workflow:
    """One graph execution. The graph runs under the span's context, never under the span
    itself, so callbacks that write attributes onto the current span cannot reach it."""

    __slots__ = ("_context", "_done", "_model", "_span", "_start")

    def __init__(self, model: str, conversation_id: str | None) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": model,
        }
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        self._model = model
        self._span = _tracer.start_span(
            f"invoke_workflow {model}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        self._context = trace.set_span_in_context(NonRecordingSpan(self._span.get_span_context()))
        self._start = timeit.default_timer()
        self._done = False

    def attach(self) -> object:
        return otel_context.attach(self._context)

    @staticmethod
    def detach(token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    def succeed(self) -> None:
        self._finish(None)

    def fail(self, error: BaseException) -> None:
        self._finish(error)

    def _finish(self, error: BaseException | None) -> None:
        if self._done:
            return
        self._done = True
        attributes = {"gen_ai.workflow.name": self._model}
        if error is not None:
            kind = error_type(error)
            attributes["error.type"] = kind
            self._span.set_attribute("error.type", kind)
            self._span.set_status(Status(StatusCode.ERROR, str(error) or kind))
        _duration.record(timeit.default_timer() - self._start, attributes)
        self._span.end()
