"""The `invoke_workflow` span and duration histogram, for every way a run ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import openai
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from lgos.run.telemetry import DURATION_BUCKETS
from tests.support.servers import serve_in_process
from tests.telemetry.conftest import Telemetry
from tests.telemetry.graphs import ANSWER, Steering, WorkflowBoomError

pytestmark = pytest.mark.anyio

CANCELLED = {"asyncio.exceptions.CancelledError", "GeneratorExit"}


async def eventually(condition: Callable[[], Any], what: str) -> Any:
    """Poll a condition with a deadline (spans end in the server's task, not the test's)."""
    deadline = time.monotonic() + 20.0
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def one_workflow_span(otel: Telemetry) -> ReadableSpan:
    [span] = otel.workflow_spans()
    return span


def assert_failed(otel: Telemetry, model: str, error_types: set[str]) -> ReadableSpan:
    span = one_workflow_span(otel)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] in error_types
    [point] = otel.duration_points()
    assert dict(point.attributes or {}) == {
        "gen_ai.workflow.name": model,
        "error.type": span.attributes["error.type"],
    }
    return span


async def test_success_records_span_child_span_and_histogram(
    client: AsyncOpenAI, otel: Telemetry
) -> None:
    response = await client.responses.create(
        model="answer", input="hello", metadata={"conversation_id": "conv-7"}
    )
    assert response.output_text == ANSWER

    span = one_workflow_span(otel)
    assert span.name == "invoke_workflow answer"
    assert span.kind is SpanKind.INTERNAL
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "answer",
        "gen_ai.conversation.id": "conv-7",
    }
    # The node's own span is a child of the workflow span, in the same trace.
    [child] = [s for s in otel.spans.get_finished_spans() if s.name == "node work"]
    assert child.context is not None
    assert span.context is not None
    assert child.context.trace_id == span.context.trace_id
    assert child.parent is not None
    assert child.parent.span_id == span.context.span_id

    [point] = otel.duration_points()
    assert dict(point.attributes or {}) == {"gen_ai.workflow.name": "answer"}
    assert point.count == 1
    assert tuple(point.explicit_bounds) == DURATION_BUCKETS
    assert span.end_time is not None
    assert span.start_time is not None
    assert point.sum <= (span.end_time - span.start_time) / 1e9 + 0.5


async def test_graph_error_records_the_exception_type(client: AsyncOpenAI, otel: Telemetry) -> None:
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(
            model="broken", messages=[{"role": "user", "content": "hello"}]
        )
    expected = f"{WorkflowBoomError.__module__}.{WorkflowBoomError.__qualname__}"
    span = assert_failed(otel, "broken", {expected})
    assert span.status.description == "the tool is down"
    assert "gen_ai.conversation.id" not in (span.attributes or {})


async def test_cancelled_background_run_is_an_error(
    client: AsyncOpenAI, otel: Telemetry, steering: Steering
) -> None:
    created = await client.responses.create(model="waiting", input="hello", background=True)
    await asyncio.wait_for(steering.started.wait(), 20)
    cancelled = await client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert steering.cancelled.is_set()
    await eventually(otel.workflow_spans, "the workflow span")
    assert_failed(otel, "waiting", {"asyncio.exceptions.CancelledError"})


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    """The app behind a real Uvicorn server on a loopback port, so a client can really leave."""
    async with serve_in_process(app) as url:
        yield url


async def test_client_disconnect_during_stream_is_an_error(
    served: str, otel: Telemetry, steering: Steering
) -> None:
    body = {
        "model": "waiting",
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
    }
    async with (
        httpx2.AsyncClient(base_url=served) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: ") and "Working" in line:
                break
        await asyncio.wait_for(steering.started.wait(), 20)
        # Leaving the block closes the connection mid-stream.
    await asyncio.wait_for(steering.cancelled.wait(), 20)
    await eventually(otel.workflow_spans, "the workflow span")
    assert_failed(otel, "waiting", CANCELLED)


async def test_a_background_run_continues_the_creating_request_trace(
    client: AsyncOpenAI, otel: Telemetry, steering: Steering
) -> None:
    tracer = otel.tracer_provider.get_tracer("test-client")
    with tracer.start_as_current_span("client request") as parent:
        created = await client.responses.create(model="waiting", input="hello", background=True)
    # The in-memory engine starts runs in a fresh context, like a worker process: only the
    # trace context carried by the job can link the run to the request.
    await asyncio.wait_for(steering.started.wait(), 20)
    await client.responses.cancel(created.id)
    span = (await eventually(otel.workflow_spans, "the workflow span"))[0]
    assert span.context.trace_id == parent.get_span_context().trace_id
