"""Misused review answers: a refused or crashing answer never loses the question, and a client
retrying a 5xx (the SDK does, twice, by default) gets the original error, never a misleading one.

Every scenario runs on the embedded in-memory persistence and on PostgreSQL, in the foreground
and as a background continuation, through the official SDK with its default retries.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from openai import AsyncOpenAI, BadRequestError, InternalServerError
from openai.types.responses import Response, ResponseFunctionToolCall

from lgos.core.errors import SERVER_ERROR_MESSAGE
from tests.interrupts.misuse import REFUSAL, Tracker, persistence, running_app

pytestmark = pytest.mark.anyio

TERMINAL = {"completed", "failed", "cancelled", "incomplete"}


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.postgres)])
async def setup(request: pytest.FixtureRequest) -> AsyncIterator[tuple[AsyncOpenAI, Tracker]]:
    tracker = Tracker()
    with persistence(request.param) as uri:
        async with running_app(tracker, uri) as app:
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
                # Default retries on: a 5xx is sent twice more, as by any SDK user.
                client = AsyncOpenAI(
                    base_url="http://test/v1",
                    api_key="x",
                    http_client=http,
                    _strict_response_validation=True,
                )
                yield client, tracker


def server_error() -> dict[str, Any]:
    return {
        "message": SERVER_ERROR_MESSAGE,
        "type": "server_error",
        "param": None,
        "code": "server_error",
    }


async def finished(client: AsyncOpenAI, response: Response) -> Response:
    with anyio.fail_after(30):
        while response.status not in TERMINAL:
            await anyio.sleep(0.01)  # let the in-process engine run; the deadline bounds it
            response = await client.responses.retrieve(response.id)
    return response


async def pause(client: AsyncOpenAI, model: str, background: bool) -> tuple[Response, str]:
    paused = await client.responses.create(model=model, input="go", background=background)
    paused = await finished(client, paused)
    calls = [item for item in paused.output if isinstance(item, ResponseFunctionToolCall)]
    assert [call.name for call in calls] == ["lgos_interrupt"]
    return paused, calls[0].call_id


async def answer(
    client: AsyncOpenAI, paused: Response, call_id: str, output: str, background: bool
) -> Response:
    response = await client.responses.create(
        model=paused.model,
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call_id, "output": output}],
        background=background,
    )
    return await finished(client, response)


async def assert_still_answerable(
    client: AsyncOpenAI, paused: Response, call_id: str, background: bool
) -> None:
    done = await answer(client, paused, call_id, "approve", background)
    assert done.status == "completed"
    assert done.output_text == "Decision: approve."


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_refused_answer_is_a_400_and_the_question_stays(
    setup: tuple[AsyncOpenAI, Tracker], background: bool
) -> None:
    client, tracker = setup
    paused, call_id = await pause(client, "picky", background)
    if background:
        # The continuation fails its own Response with the graph's message.
        failed = await answer(client, paused, call_id, "maybe", background=True)
        assert failed.status == "failed"
        assert failed.error is not None
        assert failed.error.message == REFUSAL
    else:
        with pytest.raises(BadRequestError) as raised:
            await answer(client, paused, call_id, "maybe", background=False)
        assert raised.value.message.endswith(REFUSAL)
        body: Any = raised.value.body
        assert body["message"] == REFUSAL
        assert raised.value.param == "input[0].output"
        assert raised.value.code == "invalid_answer"
    await assert_still_answerable(client, paused, call_id, background)
    assert tracker.answers == ["maybe", "approve"]  # the new answer reached the node


async def test_a_refused_streamed_answer_is_a_400_before_the_stream(
    setup: tuple[AsyncOpenAI, Tracker],
) -> None:
    client, _ = setup
    paused, call_id = await pause(client, "picky", background=False)
    with pytest.raises(BadRequestError) as raised:
        async with client.responses.stream(
            model="picky",
            previous_response_id=paused.id,
            input=[{"type": "function_call_output", "call_id": call_id, "output": "maybe"}],
        ) as stream:
            await stream.get_final_response()
    assert raised.value.param == "input[0].output"
    await assert_still_answerable(client, paused, call_id, background=False)


async def test_chat_refusals_point_at_the_tool_message(
    setup: tuple[AsyncOpenAI, Tracker],
) -> None:
    client, _ = setup
    paused = await client.chat.completions.create(
        model="picky", messages=[{"role": "user", "content": "go"}]
    )
    message = paused.choices[0].message
    assert message.tool_calls is not None
    history: list[Any] = [
        {"role": "user", "content": "go"},
        message.model_dump(exclude_none=True),
    ]
    call_id = message.tool_calls[0].id
    with pytest.raises(BadRequestError) as raised:
        await client.chat.completions.create(
            model="picky",
            messages=[*history, {"role": "tool", "tool_call_id": call_id, "content": "maybe"}],
        )
    assert raised.value.param == "messages[2].content"
    done = await client.chat.completions.create(
        model="picky",
        messages=[*history, {"role": "tool", "tool_call_id": call_id, "content": "approve"}],
    )
    assert done.choices[0].message.content == "Decision: approve."


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_crash_on_an_answer_keeps_the_question(
    setup: tuple[AsyncOpenAI, Tracker], background: bool
) -> None:
    client, tracker = setup
    paused, call_id = await pause(client, "picky", background)
    if background:
        failed = await answer(client, paused, call_id, "crash", background=True)
        assert failed.status == "failed"
        assert failed.error is not None
        assert failed.error.message == SERVER_ERROR_MESSAGE
        assert tracker.answers == ["crash"]
    else:
        # The SDK retries the 500 twice; each retry meets the same question and the same bug,
        # so the client ends with the original error (not a 409 "already answered").
        with pytest.raises(InternalServerError) as raised:
            await answer(client, paused, call_id, "crash", background=False)
        assert raised.value.body == server_error()
        assert tracker.answers == ["crash"] * 3
    await assert_still_answerable(client, paused, call_id, background)
    assert tracker.answers[-1] == "approve"  # not the saved "crash"


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_failure_after_the_answer_is_told_to_every_retry(
    setup: tuple[AsyncOpenAI, Tracker], background: bool
) -> None:
    client, tracker = setup
    paused, call_id = await pause(client, "picky", background)
    if background:
        failed = await answer(client, paused, call_id, "fail later", background=True)
        assert failed.status == "failed"
        assert failed.error is not None
        assert failed.error.message == SERVER_ERROR_MESSAGE
    else:
        with pytest.raises(InternalServerError) as raised:
            await answer(client, paused, call_id, "fail later", background=False)
        assert raised.value.body == server_error()
    # The retries did not run the failing step again, and were not told "already answered".
    assert tracker.acted == ["fail later"]
    with pytest.raises(InternalServerError):
        await answer(client, paused, call_id, "fail later", background=False)
    assert tracker.acted == ["fail later"]


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_schema_answers_are_checked_before_the_graph_runs(
    setup: tuple[AsyncOpenAI, Tracker], background: bool
) -> None:
    client, tracker = setup
    paused = await finished(
        client, await client.responses.create(model="typed", input="go", background=background)
    )
    (call,) = [item for item in paused.output if isinstance(item, ResponseFunctionToolCall)]
    assert tracker.typed_starts == 1
    bad = json.dumps({"seats": "many"})
    if background:
        failed = await answer(client, paused, call.call_id, bad, background=True)
        assert failed.status == "failed"
        assert failed.error is not None
        assert "response schema at 'seats'" in failed.error.message
    else:
        with pytest.raises(BadRequestError) as raised:
            await answer(client, paused, call.call_id, bad, background=False)
        assert raised.value.param == "input[0].output"
        assert "response schema at 'seats'" in raised.value.message
    assert tracker.typed_starts == 1  # the node did not start for the invalid answer
    booked = await answer(client, paused, call.call_id, json.dumps({"seats": 2}), background)
    assert booked.output_text == "Booked 2."


async def test_a_cancelled_background_answer_keeps_the_question(
    setup: tuple[AsyncOpenAI, Tracker],
) -> None:
    client, tracker = setup
    paused, call_id = await pause(client, "picky", background=True)
    waiting = await client.responses.create(
        model="picky",
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call_id, "output": "wait"}],
        background=True,
    )
    with anyio.fail_after(30):
        await tracker.waiting.wait()  # the node that asked has the answer
    cancelled = await client.responses.cancel(waiting.id)
    assert (await finished(client, cancelled)).status == "cancelled"
    await assert_still_answerable(client, paused, call_id, background=True)
    assert tracker.answers == ["wait", "approve"]


@pytest.mark.parametrize("answer_text", ["maybe", "crash"])
async def test_a_question_asked_in_a_subgraph_survives_a_failed_answer(
    setup: tuple[AsyncOpenAI, Tracker], answer_text: str
) -> None:
    client, tracker = setup
    paused, call_id = await pause(client, "nested", background=False)
    with pytest.raises((BadRequestError, InternalServerError)):
        await answer(client, paused, call_id, answer_text, background=False)
    done = await answer(client, paused, call_id, "approve", background=False)
    assert done.output_text == "Decision: approve."
    assert tracker.answers[-1] == "approve"
