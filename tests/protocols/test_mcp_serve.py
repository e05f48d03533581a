"""The demo graphs as MCP tools, through the official `mcp` SDK client against a real `lgos serve`.

Every behaviour is checked in both protocol eras the SDK speaks: the handshake era (2025-11-25,
where the server asks with `elicitation/create` while the call waits) and 2026-07-28 (where a
pause is an `input_required` result the client answers on its retry).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support.processes import Process

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(300, func_only=True)]

ERAS = ["legacy", "2026-07-28"]


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def mcp_url(server: Process) -> str:
    return server.base_url + "/mcp"


class Person:
    """Answers forms from a script, and keeps every form it was shown."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.forms: list[types.ElicitRequestFormParams] = []

    async def __call__(self, ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.forms.append(params)
        return self.answers.pop(0)


def accept(**content: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_tools_are_the_registry_with_the_listing_schema(
    server: Process, era: str
) -> None:
    models = httpx2.get(server.base_url + "/v1/models", timeout=30).json()["data"]
    async with Client(mcp_url(server), mode=era) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(model["id"] for model in models)
    for model in models:
        assert tools[model["id"]].description == model["description"]
    detail = httpx2.get(server.base_url + "/v1/models/simple-graph", timeout=30).json()
    listed = dict(detail["lgos"]["client_settings"]["json_schema"])
    listed.pop("$schema")
    schema = tools["simple-graph"].input_schema
    assert schema["properties"]["settings"] == {
        **listed,
        "description": "Settings for this run; omitted ones keep their defaults.",
    }
    assert schema["additionalProperties"] is False
    approval = tools["interruptible-approval"].input_schema["properties"]
    assert {"review_id", "answer"} <= set(approval)


async def test_simple_graph_answers_with_its_settings(server: Process, era: str) -> None:
    async with Client(mcp_url(server), mode=era) as client:
        plain = await client.call_tool("simple-graph", {"input": "hello"})
        tuned = await client.call_tool(
            "simple-graph",
            {"input": "hello", "settings": {"audience": "expert", "enthusiastic": True}},
        )
    assert not plain.is_error
    assert text_of(plain) == "Here is a short answer: you said 'hello'."
    assert text_of(tuned) == "In precise terms: you said 'hello'!"


async def test_streamed_parts_arrive_as_progress(server: Process, era: str) -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    async with Client(mcp_url(server), mode=era) as client:
        result = await client.call_tool(
            "multi-node-streaming", {"input": "go"}, progress_callback=progress
        )
    assert text_of(result) == "First part. Second part. Third part. "
    assert "".join(message or "" for _, message in seen) == text_of(result)
    assert [value for value, _ in seen] == sorted({value for value, _ in seen})


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (accept(answer="approve"), "Published 'the memo'."),
        (accept(answer="reject"), "Rejected: 'the memo' was not published."),
        (accept(other="Shorter"), "Not published; your feedback was noted: Shorter"),
    ],
)
async def test_a_review_is_a_form_and_its_answer_resumes_the_run(
    server: Process, era: str, answer: types.ElicitResult, expected: str
) -> None:
    person = Person(answer)
    async with Client(mcp_url(server), mode=era, elicitation_callback=person) as client:
        result = await client.call_tool("interruptible-approval", {"input": "the memo"})
    assert text_of(result) == expected
    (form,) = person.forms
    assert form.message == "Approve publishing 'the memo'?"
    assert form.requested_schema["properties"]["answer"]["enum"] == ["approve", "reject"]


async def test_a_refused_answer_is_asked_again(server: Process, era: str) -> None:
    person = Person(accept(answer="maybe"), accept(), accept(answer="approve"))
    async with Client(mcp_url(server), mode=era, elicitation_callback=person) as client:
        result = await client.call_tool("interruptible-approval", {"input": "the plan"})
    assert text_of(result) == "Published 'the plan'."
    first, second, third = (form.message for form in person.forms)
    assert first == "Approve publishing 'the plan'?"
    assert second.startswith("That answer does not fit the question")
    assert second.endswith("Approve publishing 'the plan'?")
    assert third.startswith("Pick one of the choices or write your own answer.")


async def test_a_refusal_by_the_graph_keeps_the_review_waiting(server: Process, era: str) -> None:
    """background-interrupt raises InvalidAnswerError for free text: the same question stays."""
    arguments = {"input": "q3", "settings": {"delay_seconds": 0}}
    async with Client(mcp_url(server), mode=era) as client:
        waiting = await client.call_tool("background-interrupt", arguments)
        assert waiting.structured_content is not None
        (review,) = waiting.structured_content["reviews"]
        answer = {"review_id": review["review_id"], "settings": {"delay_seconds": 0}}
        refused = await client.call_tool("background-interrupt", {**answer, "answer": "perhaps"})
        done = await client.call_tool("background-interrupt", {**answer, "answer": "approve"})
    assert refused.is_error
    assert text_of(refused) == (
        "Answer 'approve' or 'reject', not 'perhaps'. The review is still waiting."
    )
    assert text_of(done) == "Background report for: q3"


async def test_without_forms_the_review_waits_and_a_second_call_answers_it(
    server: Process, era: str
) -> None:
    async with Client(mcp_url(server), mode=era) as client:
        waiting = await client.call_tool("interruptible-approval", {"input": "the draft"})
        assert not waiting.is_error
        assert "A review is waiting" in text_of(waiting)
        assert waiting.structured_content is not None
        (review,) = waiting.structured_content["reviews"]
        assert review["question"] == "Approve publishing 'the draft'?"
        assert review["choices"] == ["approve", "reject"]
        assert review["review_id"] in text_of(waiting)
        done = await client.call_tool(
            "interruptible-approval", {"review_id": review["review_id"], "answer": "approve"}
        )
        again = await client.call_tool(
            "interruptible-approval", {"review_id": review["review_id"], "answer": "approve"}
        )
    assert text_of(done) == "Published 'the draft'."
    assert again.is_error
    assert "no pending question" in text_of(again)


async def test_declining_the_form_leaves_the_review_waiting(server: Process, era: str) -> None:
    person = Person(types.ElicitResult(action="decline"))
    async with Client(mcp_url(server), mode=era, elicitation_callback=person) as client:
        waiting = await client.call_tool("interruptible-approval", {"input": "the memo"})
        assert waiting.structured_content is not None
        (review,) = waiting.structured_content["reviews"]
        done = await client.call_tool(
            "interruptible-approval", {"review_id": review["review_id"], "answer": "reject"}
        )
    assert text_of(done) == "Rejected: 'the memo' was not published."


async def test_cancelling_the_call_cancels_the_run(server: Process, era: str) -> None:
    started = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    before = len(_tool_calls(server, "streaming-long-mock"))
    arguments = {"input": "go", "settings": {"words": 5000, "delay_ms": 50}}  # four minutes
    async with Client(mcp_url(server), mode=era) as client, anyio.create_task_group() as group:

        async def call() -> None:
            await client.call_tool("streaming-long-mock", arguments, progress_callback=progress)

        group.start_soon(call)
        await started.wait()
        group.cancel_scope.cancel()
    records = server.wait_for(
        lambda: _tool_calls(server, "streaming-long-mock")[before:], 60, "the call's record"
    )
    assert records[0]["outcome"] == "cancelled"


def _tool_calls(server: Process, tool: str) -> list[dict[str, Any]]:
    return [
        record
        for record in server.records()
        if record.get("message") == "mcp.tool_call" and record.get("mcp.tool") == tool
    ]


async def test_bad_calls_are_protocol_or_tool_errors(server: Process, era: str) -> None:
    async with Client(mcp_url(server), mode=era) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no-such-graph", {"input": "x"})
        wrong_type = await client.call_tool("simple-graph", {"input": 42})
        bad_setting = await client.call_tool(
            "simple-graph", {"input": "x", "settings": {"audience": "aliens"}}
        )
        extra = await client.call_tool("simple-graph", {"input": "x", "colour": "red"})
        forged = await client.call_tool(
            "interruptible-approval", {"review_id": "call_" + "0" * 64, "answer": "approve"}
        )
    assert unknown.value.code == types.INVALID_PARAMS
    assert "no-such-graph" in unknown.value.message
    for result in (wrong_type, bad_setting, extra, forged):
        assert result.is_error, result
    assert "input" in text_of(wrong_type)
    assert "audience" in text_of(bad_setting)


def test_a_page_of_another_site_is_refused(server: Process) -> None:
    """DNS rebinding: a foreign Origin gets a 403, a loopback one and none are served."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"accept": "application/json, text/event-stream"}

    def post(origin: str | None) -> httpx2.Response:
        extra = {"origin": origin} if origin else {}
        return httpx2.post(mcp_url(server), json=initialize, headers=headers | extra, timeout=30)

    refused = post("http://evil.example.com")
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "Origin not allowed."
    assert post("http://localhost:3000").status_code == 200
    assert post(None).status_code == 200


def _initialized_session(server: Process) -> dict[str, str]:
    """Headers of a handshake-era session, opened by hand."""
    headers = {"accept": "application/json, text/event-stream"}
    opened = httpx2.post(
        mcp_url(server),
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        },
        headers=headers,
        timeout=30,
    )
    assert opened.status_code == 200
    session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(mcp_url(server), json=initialized, headers=session, timeout=30).is_success
    return {**session, "mcp-protocol-version": "2025-11-25"}


def _rpc_error(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC error of a reply sent as JSON or as one SSE event."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        # The first event may be an empty priming one (SSE resumability).
        text = next(
            line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip()
        )
    body = json.loads(text)
    assert "error" in body, body
    return dict(body["error"])


def test_malformed_json_rpc_gets_protocol_errors_and_no_5xx(server: Process) -> None:
    session = _initialized_session(server)
    url = mcp_url(server)

    def post(body: Any, headers: dict[str, str] = session) -> httpx2.Response:
        if isinstance(body, bytes):
            typed = {**headers, "content-type": "application/json"}
            return httpx2.post(url, content=body, headers=typed, timeout=30)
        return httpx2.post(url, json=body, headers=headers, timeout=30)

    call = {"name": "simple-graph", "arguments": "hello"}
    replies = {
        "not json": post(b"{nope"),
        "not an object": post([1, 2]),
        "no method": post({"jsonrpc": "2.0", "id": 2}),
        "unknown method": post({"jsonrpc": "2.0", "id": 3, "method": "graphs/run"}),
        "arguments not an object": post(
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call}
        ),
        "unknown session": post(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
            {**session, "mcp-session-id": "no-such-session"},
        ),
    }
    statuses = {name: reply.status_code for name, reply in replies.items()}
    assert all(status < 500 for status in statuses.values()), statuses
    assert _rpc_error(replies["not json"])["code"] == types.PARSE_ERROR
    assert _rpc_error(replies["unknown method"])["code"] == types.METHOD_NOT_FOUND
    assert _rpc_error(replies["arguments not an object"])["code"] == types.INVALID_PARAMS
    assert statuses["unknown session"] == 404


def test_a_huge_argument_is_refused_before_it_runs(server: Process) -> None:
    session = _initialized_session(server)
    call = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "tools/call",
        "params": {"name": "simple-graph", "arguments": {"input": "x" * (5 * 1024 * 1024)}},
    }
    reply = httpx2.post(mcp_url(server), json=call, headers=session, timeout=60)
    assert reply.status_code == 413


async def test_a_declared_answer_shape_is_the_tools_output_schema_and_structured_content(
    server: Process, era: str
) -> None:
    """everything-agent declares its answer's JSON Schema: the tool lists it as `outputSchema`,
    and the result carries the object (the SDK client checks it against the schema) beside the
    same object as JSON text. A graph without one answers text only."""
    async with Client(mcp_url(server), mode=era) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("everything-agent", {"input": "Is the sky blue?"})
        plain = await client.call_tool("simple-graph", {"input": "hello"})
    schema = tools["everything-agent"].output_schema
    assert schema is not None
    assert schema["required"] == ["answer", "confidence"]
    assert tools["simple-graph"].output_schema is None
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert set(result.structured_content) == {"answer", "confidence"}
    assert isinstance(result.structured_content["answer"], str)
    assert json.loads(text_of(result)) == result.structured_content
    assert plain.structured_content is None
