"""What an agent sends reaches `everything-agent` through the LiteLLM proxy: JSON schema answers
(`.parse()` of both APIs, streamed and not), function tools, reasoning options, and an Agents
SDK agent with a function tool and an `output_type`.

The Responses API echoes `text.format`, `tools`, `tool_choice` and `reasoning` as LGOS received
them, so comparing the echo with what the client sent shows what LiteLLM forwarded.

`uv run pytest tests/live/test_litellm_agents.py` (starts API and proxy, as test_litellm does).
"""

from __future__ import annotations

from typing import Any

import pytest
from agents import (
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from pydantic import BaseModel

from tests.support.agents import run_forecaster

from .targets import Target

pytestmark = [pytest.mark.live, pytest.mark.timeout(900, func_only=True)]

MODEL = "everything-agent"
QUESTION = "What is the weather in Paris"
PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER = {"type": "function", "name": "get_weather", "parameters": PARAMETERS, "strict": True}


class Forecast(BaseModel):
    city: str
    summary: str


EXPECTED = Forecast(city="Paris", summary=f"You asked: {QUESTION}")


@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
def test_responses_parse_returns_the_object(litellm_target: Target, streamed: bool) -> None:
    client = litellm_target.sdk()
    if streamed:
        with client.responses.stream(model=MODEL, input=QUESTION, text_format=Forecast) as stream:
            response: Any = stream.get_final_response()
    else:
        response = client.responses.parse(model=MODEL, input=QUESTION, text_format=Forecast)
    assert response.output_parsed == EXPECTED
    # The schema LGOS received is the one the SDK sent.
    sent = Forecast.model_json_schema()
    echoed = response.text.format
    assert echoed.type == "json_schema"
    assert echoed.name == "Forecast"
    assert echoed.strict is True
    assert set(echoed.schema_["properties"]) == set(sent["properties"])


@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
def test_chat_parse_returns_the_object(litellm_target: Target, streamed: bool) -> None:
    client = litellm_target.sdk()
    messages: Any = [{"role": "user", "content": QUESTION}]
    if streamed:
        with client.chat.completions.stream(
            model=MODEL, messages=messages, response_format=Forecast
        ) as stream:
            completion: Any = stream.get_final_completion()
    else:
        completion = client.chat.completions.parse(
            model=MODEL, messages=messages, response_format=Forecast
        )
    assert completion.choices[0].message.parsed == EXPECTED


def test_tools_and_reasoning_options_reach_the_graph(litellm_target: Target) -> None:
    response = litellm_target.sdk().responses.create(
        model=MODEL,
        input=QUESTION,
        tools=[WEATHER],  # type: ignore[list-item]
        tool_choice={"type": "function", "name": "get_weather"},
        reasoning={"effort": "low", "summary": "auto"},
    )
    reasoning, call = response.output
    assert reasoning.type == "reasoning"
    # The graph's fake model says the effort it was given.
    assert [part.text for part in reasoning.summary] == [
        "The question needs get_weather, so I call it first. Effort: low."
    ]
    assert call.type == "function_call"
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Paris"}')
    assert [tool.model_dump(exclude_none=True) for tool in response.tools] == [WEATHER]
    assert response.tool_choice.type == "function"  # type: ignore[union-attr]
    assert response.reasoning is not None
    assert (response.reasoning.effort, response.reasoning.summary) == ("low", "auto")


def test_chat_tools_and_reasoning_effort_reach_the_graph(litellm_target: Target) -> None:
    client = litellm_target.sdk()
    tool: Any = {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}
    messages: Any = [{"role": "user", "content": QUESTION}]
    completion = client.chat.completions.create(
        model=MODEL, messages=messages, tools=[tool], tool_choice="required"
    )
    calls = completion.choices[0].message.tool_calls or []
    assert [(call.function.name, call.function.arguments) for call in calls] == [  # type: ignore[union-attr]
        ("get_weather", '{"city": "Paris"}')
    ]

    def reasoning_tokens(**options: Any) -> int:
        answer = client.chat.completions.create(model=MODEL, messages=messages, **options)
        assert answer.usage is not None
        assert answer.usage.completion_tokens_details is not None
        return answer.usage.completion_tokens_details.reasoning_tokens or 0

    # Chat has no reasoning text to show; the fake's reasoning gains "Effort: low." (two words,
    # two tokens) when the effort reaches it.
    assert reasoning_tokens(reasoning_effort="low") == reasoning_tokens() + 2


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_an_agents_sdk_agent_with_a_tool_and_an_output_type(
    litellm_target: Target, streamed: bool
) -> None:
    """The SDK replays the first turn's items (reasoning, and the function call with the null
    `async` field LiteLLM adds) with the tool's result, and parses the schema answer."""
    set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI
    client = AsyncOpenAI(
        base_url=litellm_target.base_url,
        api_key=litellm_target.api_key,
        _strict_response_validation=True,
        max_retries=0,
        timeout=60,
    )
    async with client:
        await run_forecaster(client, MODEL, streamed=streamed)
