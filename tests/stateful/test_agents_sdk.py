"""The OpenAI Agents SDK, unmodified, runs against a real `lgos serve`: multi-turn sessions in
its server-managed conversation modes (`conversation_id`, the Conversations API, and
`previous_response_id` chaining), and an agent with a function tool and an `output_type`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    ReasoningItem,
    Runner,
    ToolCallItem,
    function_tool,
    set_tracing_disabled,
)
from openai.types.shared import Reasoning
from pydantic import BaseModel

from tests.stateful.servers import LgosServer, start_lgos
from tests.stateful.test_stateful_processes import REGISTRY

pytestmark = [pytest.mark.anyio, pytest.mark.processes]


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
    async with server.client() as client:
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
    async with server.client() as client:
        agent = Agent(name="assistant", model=OpenAIResponsesModel("counter", client))
        first = await Runner.run(agent, "one")
        second = await Runner.run(agent, "two", previous_response_id=first.last_response_id)
        third = await Runner.run(agent, "three", previous_response_id=second.last_response_id)
    assert third.final_output == "turn 3 saw human:three"


class Forecast(BaseModel):
    city: str
    summary: str


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_an_agent_with_a_function_tool_answers_in_its_output_type(
    server: LgosServer, streamed: bool
) -> None:
    """The SDK sends the tool and the output schema; the graph calls the tool, the SDK runs it
    and sends its result back (with the turn's reasoning item), and the graph answers in the
    schema, which the SDK parses into the model."""
    cities: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        cities.append(city)
        return f"Sunny in {city}"

    question = "Use get_weather: what is the weather in Paris"
    async with server.client() as client:
        agent = Agent(
            name="forecaster",
            model=OpenAIResponsesModel("everything-agent", client),
            tools=[get_weather],
            output_type=Forecast,
            model_settings=ModelSettings(reasoning=Reasoning(effort="low", summary="auto")),
        )
        if streamed:
            running = Runner.run_streamed(agent, question)
            async for _event in running.stream_events():
                pass
            result: Any = running
        else:
            result = await Runner.run(agent, question)
    assert cities == ["Paris"]
    assert result.final_output == Forecast(
        city="Paris", summary=f"Tool results: Sunny in Paris. You asked: {question}"
    )
    # The second turn's graph saw the first turn's reasoning, replayed by the SDK.
    thoughts = [
        part.text
        for item in result.new_items
        if item.type == "reasoning_item"
        for part in item.raw_item.summary
    ]
    assert thoughts == [
        "The question needs get_weather, so I call it first. Effort: low.",
        "I have 1 tool result(s) to answer from, after 1 earlier reasoning item(s). Effort: low.",
    ]
    kinds = [type(item) for item in result.new_items]
    assert kinds[:2] == [ReasoningItem, ToolCallItem]
    assert len(result.raw_responses) == 2  # the tool turn, then the answer
