"""A real `lgos serve` process with LGOS_ENABLE_LANGFUSE=True exports to a Langfuse endpoint."""

from __future__ import annotations

import base64
import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from openai import OpenAI
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.server.sample_app import SAMPLE_DIR, SAMPLE_REGISTRY
from tests.server.sample_app.registry import ANSWER
from tests.support.processes import clean_environment, serving

pytestmark = [pytest.mark.processes, pytest.mark.slow, pytest.mark.timeout(600)]

TRACES_PATH = "/api/public/otel/v1/traces"


@dataclass
class Sink:
    """Stands in for Langfuse's OTLP endpoint and records what it receives."""

    url: str = ""
    exports: list[tuple[dict[str, str], ExportTraceServiceRequest]] = field(default_factory=list)


@pytest.fixture
def sink() -> Iterator[Sink]:
    received = Sink()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path == TRACES_PATH:
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                export = ExportTraceServiceRequest()
                export.ParseFromString(body)
                received.exports.append(({k.lower(): v for k, v in self.headers.items()}, export))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
            else:
                reply = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.shutdown()
        thread.join()


def _attributes(span: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in span.attributes:
        kind = attribute.value.WhichOneof("value")
        values[attribute.key] = getattr(attribute.value, kind) if kind else None
    return values


def test_enabled_server_exports_graph_steps_to_langfuse(sink: Sink) -> None:
    env = clean_environment(
        LGOS_ENABLE_LANGFUSE="True",
        LANGFUSE_PUBLIC_KEY="pk-lgos-process",
        LANGFUSE_SECRET_KEY="sk-lgos-process",
        LANGFUSE_BASE_URL=sink.url,
    )
    with serving([SAMPLE_REGISTRY, "--port", "0"], env, cwd=SAMPLE_DIR) as server:
        client = OpenAI(
            base_url=server.base_url + "/v1",
            api_key="unused",
            _strict_response_validation=True,
            max_retries=0,
        )
        response = client.responses.create(
            model="sample", input="hello", metadata={"conversation_id": "conv-process"}
        )
        assert response.output_text == ANSWER
    # Leaving the block stops the server; its shutdown flushes Langfuse.

    assert sink.exports, "Langfuse received nothing"
    expected_auth = "Basic " + base64.b64encode(b"pk-lgos-process:sk-lgos-process").decode()
    assert {headers["authorization"] for headers, _ in sink.exports} == {expected_auth}
    spans = [
        span
        for _, export in sink.exports
        for resource in export.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert "answer" in {span.name for span in spans}  # the graph's node
    assert len({span.trace_id for span in spans}) == 1
    sessions = {_attributes(span).get("session.id") for span in spans} - {None}
    assert sessions == {"conv-process"}
