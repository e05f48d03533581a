"""Human review: pauses as lgos_interrupt calls, strict resumes, races, replays (SDK strict)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from openai import AsyncOpenAI, BadRequestError, ConflictError
from openai.types.responses import Response, ResponseFunctionToolCall

from tests.support.graphs import Probe

pytestmark = pytest.mark.anyio


def questions(response: Response) -> list[ResponseFunctionToolCall]:
    calls = [item for item in response.output if item.type == "function_call"]
    assert all(call.name == "lgos_interrupt" for call in calls)
    return calls  # type: ignore[return-value]


def answers(*pairs: tuple[ResponseFunctionToolCall, str]) -> list[dict[str, Any]]:
    return [
        {"type": "function_call_output", "call_id": call.call_id, "output": output}
        for call, output in pairs
    ]


async def pause(
    client: AsyncOpenAI, model: str = "approval"
) -> tuple[Response, ResponseFunctionToolCall]:
    paused = await client.responses.create(model=model, input="please")
    assert paused.status == "completed"
    (call,) = questions(paused)
    return paused, call


async def test_pause_is_a_completed_response_with_the_question(client: AsyncOpenAI) -> None:
    paused, call = await pause(client)
    assert json.loads(call.arguments) == {"question": "Approve?", "choices": ["approve", "reject"]}
    assert call.call_id.startswith("call_")
    assert paused.output_text == ""


@pytest.mark.parametrize(
    ("answer", "text", "effects"),
    [("approve", "Approved and done.", ["done"]), ("reject", "Not done: reject.", [])],
)
async def test_resume_continues_after_the_question(
    client: AsyncOpenAI, probe: Probe, answer: str, text: str, effects: list[str]
) -> None:
    paused, call = await pause(client)
    assert probe.side_effects == []
    resumed = await client.responses.create(
        model="approval", previous_response_id=paused.id, input=answers((call, answer))
    )
    assert resumed.output_text == text
    assert resumed.previous_response_id == paused.id
    assert resumed.id != paused.id
    assert probe.side_effects == effects


async def test_streamed_pause_and_resume(client: AsyncOpenAI, probe: Probe) -> None:
    async with client.responses.stream(model="approval", input="please") as stream:
        paused = await stream.get_final_response()
    (call,) = questions(paused)
    async with client.responses.stream(
        model="approval", previous_response_id=paused.id, input=answers((call, "approve"))
    ) as stream:
        resumed = await stream.get_final_response()
    assert resumed.output_text == "Approved and done."
    assert probe.side_effects == ["done"]


async def test_an_answer_after_the_run_finished_is_a_final_conflict(
    http: httpx2.AsyncClient, client: AsyncOpenAI
) -> None:
    paused, call = await pause(client)
    body = {
        "model": "approval",
        "previous_response_id": paused.id,
        "input": answers((call, "approve")),
    }
    assert (await http.post("/v1/responses", json=body)).status_code == 200
    again = await http.post("/v1/responses", json=body)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "interrupt_state_conflict"
    assert again.headers["x-should-retry"] == "false"


async def test_a_wrong_call_id_is_a_conflict_and_the_question_stays(client: AsyncOpenAI) -> None:
    paused, call = await pause(client)
    wrong = {
        "type": "function_call_output",
        "call_id": call.call_id[:-4] + "0000",
        "output": "approve",
    }
    with pytest.raises(ConflictError) as raised:
        await client.responses.create(
            model="approval", previous_response_id=paused.id, input=[wrong]
        )
    assert raised.value.code == "interrupt_state_conflict"
    resumed = await client.responses.create(
        model="approval", previous_response_id=paused.id, input=answers((call, "approve"))
    )
    assert resumed.output_text == "Approved and done."


async def test_answers_for_another_response_are_a_conflict(client: AsyncOpenAI) -> None:
    _, first_call = await pause(client)
    second, _ = await pause(client)
    with pytest.raises(ConflictError):
        await client.responses.create(
            model="approval", previous_response_id=second.id, input=answers((first_call, "approve"))
        )


async def test_parallel_questions_need_every_answer(client: AsyncOpenAI) -> None:
    paused = await client.responses.create(model="parallel-questions", input="go")
    calls = questions(paused)
    assert sorted(json.loads(call.arguments)["question"] for call in calls) == ["left", "right"]
    with pytest.raises(ConflictError) as raised:
        await client.responses.create(
            model="parallel-questions",
            previous_response_id=paused.id,
            input=answers((calls[0], "a")),
        )
    assert "not answered" in raised.value.message
    done = await client.responses.create(
        model="parallel-questions",
        previous_response_id=paused.id,
        input=answers((calls[0], "a"), (calls[1], "b")),
    )
    by_question = {
        json.loads(call.arguments)["question"]: value
        for call, value in zip(calls, "ab", strict=True)
    }
    assert done.output_text == f"left={by_question['left']}, right={by_question['right']}"


async def test_two_concurrent_answers_run_the_side_effect_once(
    http: httpx2.AsyncClient, client: AsyncOpenAI, probe: Probe
) -> None:
    paused, call = await pause(client)
    body = {
        "model": "approval",
        "previous_response_id": paused.id,
        "input": answers((call, "approve")),
    }
    statuses: list[int] = []
    codes: list[str] = []

    async def answer() -> None:
        response = await http.post("/v1/responses", json=body)
        statuses.append(response.status_code)
        if response.status_code != 200:
            codes.append(response.json()["error"]["code"])

    async with anyio.create_task_group() as group:
        group.start_soon(answer)
        group.start_soon(answer)
    assert sorted(statuses) == [200, 409]
    assert codes[0] in {"run_busy", "interrupt_state_conflict"}
    assert probe.side_effects == ["done"]


async def test_a_node_may_ask_two_questions_in_a_row(client: AsyncOpenAI) -> None:
    first = await client.responses.create(model="two-questions", input="hi")
    (name_call,) = questions(first)
    assert json.loads(name_call.arguments) == {"question": "Name?"}
    second = await client.responses.create(
        model="two-questions", previous_response_id=first.id, input=answers((name_call, "Ada"))
    )
    (colour_call,) = questions(second)
    assert json.loads(colour_call.arguments) == {"question": "Favourite colour?"}
    assert colour_call.call_id != name_call.call_id
    # The first question's call id is stale now: LangGraph alone would accept it for the second.
    with pytest.raises(ConflictError):
        await client.responses.create(
            model="two-questions", previous_response_id=second.id, input=answers((name_call, "red"))
        )
    done = await client.responses.create(
        model="two-questions", previous_response_id=second.id, input=answers((colour_call, "blue"))
    )
    assert done.output_text == "Ada likes blue."


async def test_response_schema_is_published_and_enforced(client: AsyncOpenAI) -> None:
    paused = await client.responses.create(model="schema-question", input="book")
    (call,) = questions(paused)
    arguments = json.loads(call.arguments)
    assert arguments["question"] == "How many seats?"
    schema = arguments["lgos_response_schema"]
    assert set(schema["required"]) == {"seats", "seat_class"}
    with pytest.raises(BadRequestError) as raised:
        await client.responses.create(
            model="schema-question",
            previous_response_id=paused.id,
            input=answers((call, json.dumps({"seats": "many"}))),
        )
    assert raised.value.param == "input[0].output"
    # Still pending: a valid answer goes through.
    booked = await client.responses.create(
        model="schema-question",
        previous_response_id=paused.id,
        input=answers((call, json.dumps({"seats": 2, "seat_class": "economy"}))),
    )
    assert booked.output_text == "Booked 2 economy."


async def test_answered_questions_replay_as_ordinary_history(client: AsyncOpenAI) -> None:
    _, call = await pause(client)
    replay = await client.responses.create(
        model="echo",
        input=[
            {"role": "user", "content": "please"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": "lgos_interrupt",
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "approve"},
            {"role": "user", "content": "and now?"},
        ],
    )
    assert replay.output_text == "echo: human:please|ai:|tool:approve|human:and now?"


async def test_a_replay_ending_with_answers_needs_previous_response_id(client: AsyncOpenAI) -> None:
    paused, call = await pause(client)
    with pytest.raises(BadRequestError) as raised:
        await client.responses.create(
            model="approval",
            input=[
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": "lgos_interrupt",
                    "arguments": call.arguments,
                },
                {"type": "function_call_output", "call_id": call.call_id, "output": "approve"},
            ],
        )
    assert raised.value.param == "previous_response_id"
    resumed = await client.responses.create(
        model="approval",
        previous_response_id=paused.id,
        input=[
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": "lgos_interrupt",
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "approve"},
        ],
    )
    assert resumed.output_text == "Approved and done."


async def test_chat_completions_pause_as_tool_calls_and_resume_with_tool_messages(
    client: AsyncOpenAI, probe: Probe
) -> None:
    history: list[Any] = [{"role": "user", "content": "please"}]
    paused = await client.chat.completions.create(model="approval", messages=history)
    choice = paused.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.function.name == "lgos_interrupt"  # type: ignore[union-attr]
    history += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "approve"},
    ]
    resumed = await client.chat.completions.create(model="approval", messages=history)
    assert resumed.choices[0].message.content == "Approved and done."
    assert probe.side_effects == ["done"]
    with pytest.raises(ConflictError):
        await client.chat.completions.create(model="approval", messages=history)
