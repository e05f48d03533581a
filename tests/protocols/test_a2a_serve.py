"""The demo graphs as A2A agents, through the official `a2a-sdk` client against a real `lgos serve`.

The SDK client speaks A2A 1.0 (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
`SubscribeToTask`); the 0.3 method names (`message/send`, `tasks/get`, ...) that gateways still
send are checked on the wire, as is every kind of bad input.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import httpx2
import pytest
from a2a.client import A2ACardResolver, Client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from tests.support.a2a import a2a_client, user_message
from tests.support.processes import Process, clean_environment, serving

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(300, func_only=True)]

REGISTRY = "demo.registry:create_registry"
COMPLETED = TaskState.TASK_STATE_COMPLETED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


def agent_url(server: Process, model: str) -> str:
    return f"{server.base_url}/a2a/{model}"


def agent(
    server: Process, model: str, *, streaming: bool = False
) -> AbstractAsyncContextManager[Client]:
    return a2a_client(agent_url(server, model), streaming=streaming)


async def send(client: Client, request: SendMessageRequest) -> Task:
    """message/send: the one response is the task."""
    (response,) = [event async for event in client.send_message(request)]
    assert response.HasField("task"), response
    return response.task


def answer_of(task: Task) -> str:
    (artifact,) = task.artifacts
    assert artifact.name == "answer"
    (part,) = artifact.parts
    return part.text


def question_of(task: Task) -> tuple[str, dict[str, Any]]:
    assert task.status.state == INPUT_REQUIRED
    text, data = task.status.message.parts
    (review,) = MessageToDict(data.data)["reviews"]
    return text.text, review


async def test_every_graph_has_a_card_at_its_well_known_path(server: Process) -> None:
    models = httpx2.get(server.base_url + "/v1/models", timeout=30).json()["data"]
    async with httpx.AsyncClient(timeout=30) as http:
        for model in models:
            url = agent_url(server, model["id"])
            card = await A2ACardResolver(http, url).get_agent_card()
            assert card.name == model["id"]
            assert card.description == model["description"]
            (skill,) = card.skills
            assert (skill.id, skill.name, skill.description) == (
                model["id"],
                model["id"],
                model["description"],
            )
            assert card.capabilities.streaming
            assert {face.url for face in card.supported_interfaces} == {url}
            assert {face.protocol_version for face in card.supported_interfaces} == {"1.0", "0.3"}


async def test_send_answers_with_the_graphs_settings(server: Process) -> None:
    async with agent(server, "simple-graph") as client:
        plain = await send(client, user_message("hello"))
        tuned = await send(
            client, user_message("hello", settings={"audience": "expert", "enthusiastic": True})
        )
        fetched = await client.get_task(GetTaskRequest(id=plain.id))
    assert plain.status.state == COMPLETED
    assert answer_of(plain) == "Here is a short answer: you said 'hello'."
    assert answer_of(tuned) == "In precise terms: you said 'hello'!"
    assert fetched.status.state == COMPLETED
    assert answer_of(fetched) == answer_of(plain)
    assert fetched.history[0].parts[0].text == "hello"


async def collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


def appended_text(events: list[StreamResponse]) -> str:
    """The text of the artifact chunks appended while the graph streamed."""
    return "".join(
        part.text
        for event in events
        if event.HasField("artifact_update") and not event.artifact_update.last_chunk
        for part in event.artifact_update.artifact.parts
    )


def states(events: list[StreamResponse]) -> list[int]:
    return [
        event.status_update.status.state
        if event.HasField("status_update")
        else event.task.status.state
        for event in events
        if event.HasField("status_update") or event.HasField("task")
    ]


async def test_stream_brings_each_part_as_it_is_made(server: Process) -> None:
    async with agent(server, "multi-node-streaming", streaming=True) as client:
        events = await collect(client.send_message(user_message("go")))
    assert events[0].HasField("task")
    assert appended_text(events) == "First part. Second part. Third part. "
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert len(chunks) > 3  # streamed, not sent whole at the end
    assert chunks[0].append is False
    assert all(chunk.append for chunk in chunks[1:-1])
    last = chunks[-1]
    assert last.last_chunk
    assert not last.append  # the whole answer replaces the chunks: one part
    assert [part.text for part in last.artifact.parts] == ["First part. Second part. Third part. "]
    assert states(events) == [
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
        COMPLETED,
    ]


async def test_status_events_are_working_status_messages(server: Process) -> None:
    async with agent(server, "status-events", streaming=True) as client:
        events = await collect(client.send_message(user_message("the tides")))
    progress = [
        event.status_update.status.message.parts[0].text
        for event in events
        if event.HasField("status_update") and event.status_update.status.message.parts
    ]
    assert progress == ["Reading the question", "Looking things up"]
    assert appended_text(events) == "Done looking into 'the tides'."


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("approve", "Published 'the memo'."),
        ("reject", "Rejected: 'the memo' was not published."),
        ("Shorter", "Not published; your feedback was noted: Shorter"),
    ],
)
async def test_a_pause_is_input_required_and_the_next_message_answers_it(
    server: Process, reply: str, expected: str
) -> None:
    async with agent(server, "interruptible-approval") as client:
        waiting = await send(client, user_message("the memo"))
        text, review = question_of(waiting)
        done = await send(client, user_message(reply, task=waiting))
    assert text == "Approve publishing 'the memo'?\nChoices: approve, reject (or your own answer)"
    assert review["question"] == "Approve publishing 'the memo'?"
    assert review["choices"] == ["approve", "reject"]
    assert review["review_id"].startswith("call_")
    assert done.id == waiting.id
    assert done.status.state == COMPLETED
    assert answer_of(done) == expected


async def test_a_data_part_answers_too(server: Process) -> None:
    async with agent(server, "interruptible-approval") as client:
        waiting = await send(client, user_message("the memo"))
        _, review = question_of(waiting)
        done = await send(client, user_message(data={review["review_id"]: "approve"}, task=waiting))
    assert answer_of(done) == "Published 'the memo'."


async def test_a_refused_answer_is_asked_again(server: Process) -> None:
    """An empty reply is refused by the question; 'perhaps' by the graph itself
    (background-interrupt raises InvalidAnswerError): both ask again, saying why."""
    settings = {"delay_seconds": 0}
    async with agent(server, "background-interrupt") as client:
        waiting = await send(client, user_message("q3", settings=settings))
        question, _ = question_of(waiting)
        empty = await send(client, user_message("  ", task=waiting))
        perhaps = await send(client, user_message("perhaps", task=waiting))
        done = await send(client, user_message("approve", task=waiting))
    for again, why in [(empty, "An answer is needed."), (perhaps, "Answer 'approve' or 'reject'")]:
        text, _ = question_of(again)
        assert text.startswith(why), text
        assert text.endswith(question)
    assert done.status.state == COMPLETED
    assert answer_of(done).endswith("Background report for: q3")


async def test_a_finished_task_takes_no_more_messages(server: Process) -> None:
    async with agent(server, "simple-graph") as client:
        done = await send(client, user_message("hello"))
        with pytest.raises(A2AError) as refused:
            await send(client, user_message("again", task=done))
    assert "terminal" in str(refused.value) or "not waiting" in str(refused.value)


def a2a_records(server: Process, model: str) -> list[dict[str, Any]]:
    return [
        record
        for record in server.records()
        if record.get("message") == "a2a.message" and record.get("a2a.agent") == model
    ]


async def test_cancelling_the_task_cancels_the_run(server: Process) -> None:
    model = "streaming-long-mock"
    before = len(a2a_records(server, model))
    settings = {"words": 5000, "delay_ms": 50}  # four minutes
    async with agent(server, model, streaming=True) as client:
        stream = client.send_message(user_message("go", settings=settings))
        async for event in stream:
            if event.HasField("artifact_update"):
                break
        task_id = event.artifact_update.task_id
        cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
        await stream.aclose()  # type: ignore[attr-defined]
        fetched = await client.get_task(GetTaskRequest(id=task_id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert fetched.status.state == TaskState.TASK_STATE_CANCELED
    records = server.wait_for(lambda: a2a_records(server, model)[before:], 60, "the task's record")
    assert records[0]["outcome"] == "cancelled"
    assert records[0]["a2a.task_id"] == task_id


async def test_resubscribing_after_a_disconnect_loses_and_repeats_nothing(server: Process) -> None:
    settings = {"words": 60, "delay_ms": 20}
    async with agent(server, "streaming-long-mock", streaming=True) as client:
        stream = client.send_message(user_message("go", settings=settings))
        before: list[StreamResponse] = []
        async for event in stream:
            before.append(event)
            if len([e for e in before if e.HasField("artifact_update")]) == 5:
                break
        await stream.aclose()  # type: ignore[attr-defined]  # the client goes away
        task_id = before[0].task.id
        after = await collect(client.subscribe(SubscribeToTaskRequest(id=task_id)))
    snapshot = after[0]
    assert snapshot.HasField("task")
    held = "".join(part.text for part in snapshot.task.artifacts[0].parts)
    seen = appended_text(before)
    assert held.startswith(seen)  # everything sent before the disconnect, once
    final = after[-2].artifact_update
    assert final.last_chunk
    (whole,) = final.artifact.parts
    # The snapshot plus what followed is the whole answer: no gap, no repeat.
    assert held + appended_text(after[1:]) == whole.text
    assert len(whole.text.split()) == 60
    assert after[-1].status_update.status.state == COMPLETED


async def test_unknown_tasks_are_protocol_errors(server: Process) -> None:
    async with agent(server, "interruptible-approval") as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id="no-such-task"))
        ghost = Task(id="no-such-task", context_id="no-such-context")
        with pytest.raises(TaskNotFoundError):
            await send(client, user_message("approve", task=ghost))


async def test_a_task_of_one_graph_is_unknown_to_another(server: Process) -> None:
    async with agent(server, "simple-graph") as simple, agent(server, "status-events") as other:
        done = await send(simple, user_message("hello"))
        with pytest.raises(TaskNotFoundError):
            await other.get_task(GetTaskRequest(id=done.id))


def rpc(server: Process, model: str, body: Any, **headers: str) -> httpx2.Response:
    """One JSON-RPC POST; A2A 1.0 methods (`SendMessage`, not `message/send`) are sent with
    the version header, as the SDK client does."""
    url = agent_url(server, model)
    if isinstance(body, dict) and "/" not in str(body.get("method", "/")):
        headers = {"a2a-version": "1.0", **headers}
    if isinstance(body, bytes):
        typed = {"content-type": "application/json", **headers}
        return httpx2.post(url, content=body, headers=typed, timeout=60)
    return httpx2.post(url, json=body, headers=headers, timeout=60)


def v03_send(text: str, method: str = "message/send", **message: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "message": {
                "kind": "message",
                "messageId": uuid.uuid4().hex,
                "role": "user",
                "parts": [{"kind": "text", "text": text}],
                **message,
            }
        },
    }


def test_the_0_3_method_names_are_served(server: Process) -> None:
    sent = rpc(server, "interruptible-approval", v03_send("the memo"))
    task = sent.json()["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"][0]["text"].startswith("Approve publishing")
    answer = v03_send("approve", taskId=task["id"], contextId=task["contextId"])
    done = rpc(server, "interruptible-approval", answer).json()["result"]
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"] == [{"kind": "text", "text": "Published 'the memo'."}]
    get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}}
    fetched = rpc(server, "interruptible-approval", get).json()["result"]
    assert fetched["status"]["state"] == "completed"


def test_message_stream_0_3_is_sse(server: Process) -> None:
    reply = rpc(server, "multi-node-streaming", v03_send("go", method="message/stream"))
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line[5:])["result"]
        for line in reply.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]
    chunks = [event for event in events if event.get("kind") == "artifact-update"]
    assert "".join(c["artifact"]["parts"][0]["text"] for c in chunks[:-1]) == (
        "First part. Second part. Third part. "
    )
    assert events[-1]["status"]["state"] == "completed"
    assert events[-1]["final"] is True


def error_of(response: httpx2.Response) -> dict[str, Any]:
    body = response.json()
    assert "error" in body, body
    return dict(body["error"])


def test_bad_json_rpc_gets_protocol_errors_and_no_5xx(server: Process) -> None:
    send_params = MessageToDict(user_message("hello"))
    replies = {
        "not json": rpc(server, "simple-graph", b"{nope"),
        "a batch": rpc(server, "simple-graph", [1, 2]),
        "no method": rpc(server, "simple-graph", {"jsonrpc": "2.0", "id": 1}),
        "unknown method": rpc(
            server, "simple-graph", {"jsonrpc": "2.0", "id": 2, "method": "graphs/run"}
        ),
        "message is a string": rpc(
            server,
            "simple-graph",
            {"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": "hi"}},
        ),
        "parts not a list": rpc(
            server,
            "simple-graph",
            v03_send("x") | {"params": {"message": {"role": "user", "parts": 5}}},
        ),
        "no parts": rpc(
            server,
            "simple-graph",
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "SendMessage",
                "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}},
            },
        ),
        "bad setting": rpc(
            server,
            "simple-graph",
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "SendMessage",
                "params": {
                    **send_params,
                    "message": {
                        **send_params["message"],
                        "metadata": {"lgos_settings": {"audience": "aliens"}},
                    },
                },
            },
        ),
        "settings for a graph without them": rpc(
            server,
            "multi-node-streaming",
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "SendMessage",
                "params": {
                    **send_params,
                    "message": {
                        **send_params["message"],
                        "metadata": {"lgos_settings": {"audience": "expert"}},
                    },
                },
            },
        ),
        "an image part": rpc(
            server,
            "simple-graph",
            v03_send("x")
            | {
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "m",
                        "role": "user",
                        "parts": [
                            {
                                "kind": "file",
                                "file": {"uri": "https://x/y.png", "mimeType": "image/png"},
                            }
                        ],
                    }
                }
            },
        ),
        "get of an unknown task": rpc(
            server,
            "simple-graph",
            {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "nope"}},
        ),
        "cancel with a numeric id": rpc(
            server,
            "simple-graph",
            {"jsonrpc": "2.0", "id": 8, "method": "CancelTask", "params": {"id": 42}},
        ),
    }
    statuses = {name: reply.status_code for name, reply in replies.items()}
    assert all(status < 500 for status in statuses.values()), statuses
    codes = {name: error_of(reply)["code"] for name, reply in replies.items()}
    assert codes["not json"] == -32700
    assert codes["a batch"] == -32600
    assert codes["unknown method"] == -32601
    # The SDK's 0.3 adapter calls a malformed message an invalid request.
    assert codes["parts not a list"] in (-32600, -32602)
    for name in (
        "message is a string",
        "no parts",
        "bad setting",
        "settings for a graph without them",
        "an image part",
    ):
        assert codes[name] == -32602, (name, error_of(replies[name]))
    assert "audience" in error_of(replies["bad setting"])["message"]
    assert codes["get of an unknown task"] == -32001
    assert codes["cancel with a numeric id"] in (-32001, -32602)


def test_a_huge_message_is_refused_before_it_runs(server: Process) -> None:
    before = len(a2a_records(server, "simple-graph"))
    reply = rpc(server, "simple-graph", v03_send("x" * (5 * 1024 * 1024)))
    assert reply.status_code == 413
    assert error_of(reply)["code"] == -32600
    assert len(a2a_records(server, "simple-graph")) == before


def test_a_page_of_another_site_is_refused(server: Process) -> None:
    body = v03_send("hello")
    refused = rpc(server, "simple-graph", body, origin="http://evil.example.com")
    assert refused.status_code == 403
    assert error_of(refused)["message"] == "Origin not allowed."
    assert rpc(server, "simple-graph", body, origin="http://localhost:3000").status_code == 200
    assert rpc(server, "simple-graph", body).status_code == 200


def test_a2a_can_be_turned_off() -> None:
    env = clean_environment(LGOS_BACKGROUND="memory", LGOS_ENABLE_A2A="false")
    with serving([REGISTRY, "--port", "0"], env) as process:
        card = httpx2.get(
            agent_url(process, "simple-graph") + "/.well-known/agent-card.json", timeout=30
        )
        sent = rpc(process, "simple-graph", v03_send("hello"))
        models = httpx2.get(process.base_url + "/v1/models", timeout=30)
    assert card.status_code == 404
    assert sent.status_code in (404, 405)
    assert models.status_code == 200


def test_every_call_has_one_request_record(server: Process) -> None:
    def calls() -> list[dict[str, Any]]:
        return [
            record
            for record in server.records()
            if record.get("message") == "a2a.request" and record.get("a2a.agent") == "status-events"
        ]

    before = len(calls())
    rpc(server, "status-events", v03_send("hello"))
    rpc(server, "status-events", {"jsonrpc": "2.0", "id": 9, "method": "graphs/run"})
    rpc(server, "status-events", b"{nope")
    records = server.wait_for(
        lambda: calls()[before:] if len(calls()) >= before + 3 else None, 60, "three records"
    )
    assert [(r["a2a.method"], r["outcome"]) for r in records] == [
        ("message/send", "ok"),
        ("graphs/run", "error -32601"),
        (None, "error -32700"),
    ]


async def test_a_background_graph_runs_on_the_engine(server: Process) -> None:
    """background-mock is a background Response of the engine (here the in-memory one): the
    task id is the Response id, and `/v1/responses/{id}` shows the same run."""
    async with agent(server, "background-mock") as client:
        done = await send(client, user_message("q1", settings={"delay_seconds": 0}))
        fetched = await client.get_task(GetTaskRequest(id=done.id))
        with pytest.raises(A2AError) as too_long:
            await send(client, user_message("q2", settings={"delay_seconds": 9999}))
        with pytest.raises(A2AError) as follow_up:
            await send(client, user_message("more", task=done))
    assert done.id.startswith("resp_")
    assert done.status.state == COMPLETED
    assert answer_of(done) == "Background report for: q1"
    assert answer_of(fetched) == answer_of(done)
    assert fetched.context_id == done.context_id
    assert "delay_seconds" in str(too_long.value)
    # A finished long task takes no more messages, as a foreground one.
    assert "not waiting for input (it is completed)" in str(follow_up.value)
    polled = httpx2.get(f"{server.base_url}/v1/responses/{done.id}", timeout=30).json()
    assert polled["status"] == "completed"
    texts = [
        part["text"]
        for item in polled["output"]
        if item["type"] == "message"
        for part in item["content"]
    ]
    assert texts[-1] == "Background report for: q1"  # after its commentary
