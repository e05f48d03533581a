"""The graphs as MCP tools through LiteLLM's MCP gateway (demo/litellm/config.yaml,
`mcp_servers.lgos`): listed under the gateway's `lgos-` prefix, called, and a review answered.

The gateway connects to LGOS without the elicitation capability, so a pause comes back as the
review-waiting result and a second call answers it (docs/mcp-a2a.md).
`uv run pytest tests/live/test_litellm_mcp.py`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .targets import Target

pytestmark = [pytest.mark.live, pytest.mark.anyio, pytest.mark.timeout(900, func_only=True)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def gateway(target: Target) -> AsyncIterator[Client]:
    url = target.base_url.removesuffix("/v1") + "/mcp"
    headers = {"x-litellm-api-key": f"Bearer {target.api_key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_a_tool_call_through_the_gateway_reaches_lgos(litellm_target: Target) -> None:
    async with gateway(litellm_target) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("lgos-simple-graph", {"input": "hello"})
    assert {"lgos-simple-graph", "lgos-interruptible-approval"} <= names
    assert text_of(result) == "Here is a short answer: you said 'hello'."


async def test_a_review_through_the_gateway_is_answered_by_a_second_call(
    litellm_target: Target,
) -> None:
    async with gateway(litellm_target) as client:
        waiting = await client.call_tool("lgos-interruptible-approval", {"input": "the memo"})
        assert waiting.structured_content is not None, text_of(waiting)
        (review,) = waiting.structured_content["reviews"]
        done = await client.call_tool(
            "lgos-interruptible-approval", {"review_id": review["review_id"], "answer": "approve"}
        )
    assert text_of(done) == "Published 'the memo'."


async def test_structured_content_passes_through_the_gateway(litellm_target: Target) -> None:
    """everything-agent declares its answer's shape: through the gateway the tool keeps its
    outputSchema and the result its structuredContent, the same object as the text block."""
    async with gateway(litellm_target) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("lgos-everything-agent", {"input": "Is the sky blue?"})
    assert tools["lgos-everything-agent"].output_schema is not None
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert result.structured_content == json.loads(text_of(result))
