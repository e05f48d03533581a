"""The OpenAI Agents SDK, unmodified, runs against a real `lgos serve`: multi-turn sessions in
its server-managed conversation modes (`conversation_id`, the Conversations API, and
`previous_response_id` chaining), and an agent with a function tool and an `output_type`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import (
    Agent,
    OpenAIResponsesModel,
    ReasoningItem,
    Runner,
    ToolCallItem,
    set_tracing_disabled,
)

from tests.stateful.servers import LgosServer, start_lgos
from tests.stateful.test_stateful_processes import REGISTRY
from tests.support.agents import run_forecaster

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(120, func_only=True)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LgosServer]:
    set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI
    started = start_lgos(REGISTRY, "", Path(tmp_path_factory.mktemp("agents")), {})
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.parametrize("model", ["counter", "history"])
async def test_a_session_by_conversation_id(server: LgosServer, model: str) -> None:
    async with server.sdk() as client:
        agent = Agent(name="assistant", model=OpenAIResponsesModel(model, client))
        conversation = await client.conversations.create()
        outputs = []
        for text in ("one", "two", "three"):
            result = await Runner.run(agent, text, conversation_id=conversation.id)
            outputs.append(result.final_output)
        items = [item async for item in client.conversations.items.list(conversation.id)]
    if model == "counter":
        assert outputs == ["turn 1 saw human:one", "turn 2 saw human:two", "turn 3 saw human:three"]
    else:
        assert outputs[2] == (
            f"saw human:one|ai:{outputs[0]}|human:two|ai:{outputs[1]}|human:three"
        )
    assert len(items) == 6


async def test_a_session_by_previous_response_id(server: LgosServer) -> None:
    async with server.sdk() as client:
        agent = Agent(name="assistant", model=OpenAIResponsesModel("counter", client))
        first = await Runner.run(agent, "one")
        second = await Runner.run(agent, "two", previous_response_id=first.last_response_id)
        third = await Runner.run(agent, "three", previous_response_id=second.last_response_id)
    assert third.final_output == "turn 3 saw human:three"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_an_agent_with_a_function_tool_answers_in_its_output_type(
    server: LgosServer, streamed: bool
) -> None:
    """The SDK sends the tool and the output schema; the graph calls the tool, the SDK runs it
    and sends its result back (with the turn's reasoning item), and the graph answers in the
    schema, which the SDK parses into the model."""
    async with server.sdk() as client:
        result = await run_forecaster(client, "everything-agent", streamed=streamed)
    kinds = [type(item) for item in result.new_items]
    assert kinds[:2] == [ReasoningItem, ToolCallItem]
    assert len(result.raw_responses) == 2  # the tool turn, then the answer
