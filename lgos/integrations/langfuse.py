"""Langfuse tracing of graph steps (`lgos[langfuse]`, `LGOS_ENABLE_LANGFUSE=True`).

The Langfuse client gets a tracer provider of its own. Without one it joins (or becomes) the
global provider, and then every exporter would receive prompts and outputs, and every HTTP span
would go to Langfuse. Its observations still share each run's trace id: the graph runs under
the workflow span's context (see `lgos.run.telemetry`), which Langfuse's spans take as parent.

Nothing here is imported by `import lgos`; the server imports it only when enabled.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lgos.core.errors import ConfigurationError
from lgos.run import telemetry

if TYPE_CHECKING:
    from langfuse import Langfuse
    from opentelemetry.sdk.trace.export import SpanExporter

    from lgos.core.request import GraphRequest


@contextmanager
def langfuse_tracing(
    *,
    public_key: str | None = None,
    secret_key: str | None = None,
    base_url: str | None = None,
    span_exporter: SpanExporter | None = None,
) -> Iterator[Langfuse]:
    """Trace every graph run in Langfuse while the block runs.

    Unset arguments come from the `LANGFUSE_*` variables, as Langfuse reads them.
    `span_exporter` replaces the OTLP exporter (tests pass an in-memory one).
    """
    try:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON
    except ImportError as error:
        raise ConfigurationError(
            "LGOS_ENABLE_LANGFUSE=True needs the langfuse extra: install lgos[langfuse]"
        ) from error
    public_key = public_key or os.environ.get("LANGFUSE_PUBLIC_KEY") or None
    if not public_key:
        raise ConfigurationError("LGOS_ENABLE_LANGFUSE=True needs LANGFUSE_PUBLIC_KEY")

    # ALWAYS_ON, set explicitly: a bare TracerProvider would read OTEL_TRACES_SAMPLER and a
    # parent-based sampler would drop Langfuse's spans whenever the app's trace is not sampled.
    provider = TracerProvider(sampler=ALWAYS_ON)
    options: dict[str, Any] = {"tracer_provider": provider}  # Langfuse()'s keyword arguments
    if secret_key:
        options["secret_key"] = secret_key
    if base_url:
        options["base_url"] = base_url
    if span_exporter is not None:
        options["span_exporter"] = span_exporter
    client = Langfuse(public_key=public_key, **options)
    key = public_key

    def callbacks(request: GraphRequest) -> Sequence[Any]:
        # One handler per run (it keeps per-run state); the key selects our client, never a
        # client the environment would build.
        return [CallbackHandler(public_key=key)]

    remove = telemetry.add_run_callbacks(callbacks)
    try:
        yield client
    finally:
        remove()
        try:
            client.flush()
            client.shutdown()
        finally:
            provider.shutdown()
