"""The OpenAI Agents SDK agent both Agents SDK suites run (against `lgos serve` directly, and
through LiteLLM): a function tool and an `output_type`, answered by `everything-agent`."""

from __future__ import annotations

from typing import Any

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool
from openai import AsyncOpenAI
from openai.types.shared import Reasoning
from pydantic import BaseModel

QUESTION = "Use get_weather: what is the weather in Paris"


class Forecast(BaseModel):
    city: str
    summary: str


async def run_forecaster(client: AsyncOpenAI, model: str, *, streamed: bool) -> Any:
    """Run the agent once (`run` or `run_streamed`) and check what any client would: the SDK ran
    the tool for the graph, the answer parses into the schema, and the second turn's graph saw the
    first turn's reasoning, replayed by the SDK. Returns the run's result for further checks."""
    cities: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        cities.append(city)
        return f"Sunny in {city}"

    agent = Agent(
        name="forecaster",
        model=OpenAIResponsesModel(model, client),
        tools=[get_weather],
        output_type=Forecast,
        model_settings=ModelSettings(reasoning=Reasoning(effort="low", summary="auto")),
    )
    if streamed:
        running = Runner.run_streamed(agent, QUESTION)
        async for _event in running.stream_events():
            pass
        result: Any = running
    else:
        result = await Runner.run(agent, QUESTION)
    assert cities == ["Paris"]
    assert result.final_output == Forecast(
        city="Paris", summary=f"Tool results: Sunny in Paris. You asked: {QUESTION}"
    )
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
    return result
