"""Langfuse traces graph steps on its own provider, in the workflow span's trace."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langfuse._client.resource_manager import LangfuseResourceManager
from openai import AsyncOpenAI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from lgos import create_app
from lgos.core.request import GraphRequest
from lgos.integrations.langfuse import langfuse_tracing
from lgos.run import telemetry
from tests.telemetry.conftest import Telemetry, explicit_settings
from tests.telemetry.graphs import ANSWER, Steering, registry_factory

pytestmark = pytest.mark.anyio


@pytest.fixture
def langfuse_spans() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    # Langfuse keeps one client per public key for the whole process; start from none.
    LangfuseResourceManager.reset()
    exporter = InMemorySpanExporter()
    with langfuse_tracing(
        public_key="pk-lgos-test",
        secret_key="sk-lgos-test",
        base_url="http://127.0.0.1:9",  # never contacted: the exporter replaces OTLP
        span_exporter=exporter,
    ) as client:
        yield client, exporter
    LangfuseResourceManager.reset()


async def test_langfuse_spans_share_the_trace_without_touching_the_workflow_span(
    langfuse_spans: tuple[Any, InMemorySpanExporter], client: AsyncOpenAI, otel: Telemetry
) -> None:
    langfuse, exporter = langfuse_spans
    response = await client.responses.create(
        model="answer", input="hello", metadata={"conversation_id": "conv-lf"}
    )
    assert response.output_text == ANSWER
    langfuse.flush()

    [workflow] = otel.workflow_spans()
    assert workflow.context is not None
    # No Langfuse attribute reached the workflow span, and no Langfuse span reached our exporter.
    assert set(workflow.attributes or {}) == {
        "gen_ai.operation.name",
        "gen_ai.workflow.name",
        "gen_ai.conversation.id",
    }
    assert {span.name for span in otel.spans.get_finished_spans()} == {
        "invoke_workflow answer",
        "node work",
    }

    observations = exporter.get_finished_spans()
    assert observations, "Langfuse recorded no graph steps"
    assert {span.context.trace_id for span in observations if span.context} == {
        workflow.context.trace_id
    }
    [root] = [
        span
        for span in observations
        if span.parent is not None and span.parent.span_id == workflow.context.span_id
    ]
    assert root.attributes is not None
    assert root.attributes["session.id"] == "conv-lf"
    assert root.attributes.get("langfuse.internal.is_app_root") is True
    assert "node" in {span.name for span in observations}


async def test_enabled_server_traces_runs_only_while_it_runs(
    monkeypatch: pytest.MonkeyPatch, otel: Telemetry
) -> None:
    LangfuseResourceManager.reset()
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lgos-env")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lgos-env")
    monkeypatch.setenv("LANGFUSE_BASE_URL", "http://127.0.0.1:9")
    request = GraphRequest(model="answer", messages=())
    app = create_app(
        registry_factory(Steering(otel.tracer_provider)),
        settings=explicit_settings(ENABLE_LANGFUSE=True),
    )
    assert telemetry.run_callbacks(request) == []
    try:
        async with app.router.lifespan_context(app):
            [handler] = telemetry.run_callbacks(request)
            assert type(handler).__module__.startswith("langfuse.")
        assert telemetry.run_callbacks(request) == []
    finally:
        LangfuseResourceManager.reset()


def test_importing_lgos_never_initialises_langfuse() -> None:
    code = (
        "import sys, lgos, lgos.server, lgos.cli, lgos.server.app\n"
        "print(sorted(name for name in sys.modules if name.startswith('langfuse')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"
