"""Owner scopes over MCP: a review waiting in one tenant's scope does not exist for another,
as on the OpenAI routes (LGOS_SCOPE_HEADER, set by the gateway in front of LGOS)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.processes import Process

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(300, func_only=True)]


@asynccontextmanager
async def tenant(server: Process, name: str, mode: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"x-tenant": name}, timeout=60) as http:
        transport = streamable_http_client(server.base_url + "/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_another_tenant_cannot_answer_a_review(server: Process, mode: str) -> None:
    async with tenant(server, "acme", mode) as acme, tenant(server, "globex", mode) as globex:
        waiting = await acme.call_tool("interruptible-approval", {"input": "the merger"})
        assert waiting.structured_content is not None
        (review,) = waiting.structured_content["reviews"]
        answer = {"review_id": review["review_id"], "answer": "approve"}
        stolen = await globex.call_tool("interruptible-approval", answer)
        done = await acme.call_tool("interruptible-approval", answer)
    assert stolen.is_error
    assert "no pending question" in text_of(stolen)
    assert text_of(done) == "Published 'the merger'."
