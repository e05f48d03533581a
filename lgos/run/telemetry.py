"""OpenTelemetry for graph executions: an `invoke_workflow {model}` span and a histogram.

Only the OpenTelemetry API is used; nothing is recorded until the host installs an SDK (for
example with `opentelemetry-instrument lgos serve ...`). The tracer and the histogram are
fetched on first use, not at import, so a host or a test can choose the providers first
(`use_providers`) without relying on the process-wide globals, which can be set only once.

Run callbacks: integrations that trace graph steps (Langfuse) register a factory here; the
runner adds what the factories return to each graph run's RunnableConfig.
"""

from __future__ import annotations

import threading
import timeit
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import NonRecordingSpan, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from lgos.core.request import GraphRequest

SCOPE = "lgos"
DURATION_METRIC = "gen_ai.invoke_workflow.duration"
# The GenAI conventions' bucket advice for workflow durations (seconds).
DURATION_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200)


class _Instruments:
    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: metrics.MeterProvider | None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            DURATION_METRIC,
            unit="s",
            description="Duration of a graph execution",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )


_lock = threading.Lock()
_instruments: _Instruments | None = None


def use_providers(
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
) -> None:
    """Record graph executions through these providers (None: the global ones).

    Executions already running keep the instruments they started with.
    """
    global _instruments
    with _lock:
        _instruments = _Instruments(tracer_provider, meter_provider)


def _current_instruments() -> _Instruments:
    global _instruments
    instruments = _instruments
    if instruments is None:
        with _lock:
            if _instruments is None:
                # The globals are proxies until an SDK is installed, then they delegate.
                _instruments = _Instruments(None, None)
            instruments = _instruments
    return instruments


def error_type(error: BaseException) -> str:
    """The exception's qualified name, builtins unqualified (as the GenAI utilities do)."""
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class Workflow:
    """One graph execution. The graph runs under the span's context, never under the span
    itself, so callbacks that write attributes onto the current span cannot reach it."""

    __slots__ = ("_context", "_done", "_duration", "_model", "_span", "_start")

    def __init__(self, model: str, conversation_id: str | None) -> None:
        instruments = _current_instruments()
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": model,
        }
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        self._model = model
        self._duration = instruments.duration
        self._span = instruments.tracer.start_span(
            f"invoke_workflow {model}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        span_context = self._span.get_span_context()
        # No SDK and no parent: the span is the invalid no-op span, and running the graph
        # under it would change nothing a callback can see, so the run skips attaching a
        # context at every step (a per-request cost otherwise paid for nothing).
        self._context = (
            trace.set_span_in_context(NonRecordingSpan(span_context))
            if span_context.is_valid
            else None
        )
        self._start = timeit.default_timer()
        self._done = False

    @property
    def context(self) -> otel_context.Context | None:
        """The context each step of the graph runs under (None: run it as it is)."""
        return self._context

    def succeed(self) -> None:
        self._finish(None)

    def fail(self, error: BaseException) -> None:
        self._finish(error)

    def _finish(self, error: BaseException | None) -> None:
        # At most once: a run can end in its own handler and again in the consumer's close.
        if self._done:
            return
        self._done = True
        attributes = {"gen_ai.workflow.name": self._model}
        if error is not None:
            kind = error_type(error)
            attributes["error.type"] = kind
            self._span.set_attribute("error.type", kind)
            self._span.set_status(Status(StatusCode.ERROR, str(error) or kind))
        self._duration.record(timeit.default_timer() - self._start, attributes)
        self._span.end()


CallbackFactory = Callable[[GraphRequest], Sequence[Any]]
_callback_factories: list[CallbackFactory] = []


def add_run_callbacks(factory: CallbackFactory) -> Callable[[], None]:
    """Add LangChain callbacks to every graph run from now on; returns the undo function."""
    _callback_factories.append(factory)

    def remove() -> None:
        if factory in _callback_factories:
            _callback_factories.remove(factory)

    return remove


def run_callbacks(request: GraphRequest) -> list[Any]:
    """The callbacks for one graph run (new handler objects per run: they keep run state)."""
    callbacks: list[Any] = []
    for factory in list(_callback_factories):
        callbacks.extend(factory(request))
    return callbacks
