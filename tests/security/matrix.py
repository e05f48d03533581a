"""The expectations of the security matrix: for every route of the app, how to ask it about an
owner's objects and what each kind of caller must get back.

A route is named by its methods and path as the app's route table has them; `expectation_for`
answers None for one it does not know, which fails the matrix (a new route must say here who
may reach it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

from lgos.http.auth import MISSING_KEY, WRONG_KEY
from lgos.wire import ids
from lgos.wire.interrupts import interrupt_call_id

NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}
LONG_DELAY = {"lgos_settings": '{"delay_seconds": 300}'}
DEADLINE_SECONDS = 60.0


@dataclass(frozen=True)
class Owned:
    """The ids of one owner's objects (or unknown ids of the same shapes)."""

    response: str  # a stored foreground Response
    paused: str  # a Response waiting for its review
    call_id: str  # the call id of that review
    finished: str  # a background Response that has finished
    streamed: str  # a background Response created as a stream (so it can be replayed)
    running: str  # a background Response still running
    conversation: str
    item: str  # an item of that Conversation

    @property
    def values(self) -> list[str]:
        return [
            self.response,
            self.paused,
            self.call_id,
            self.finished,
            self.streamed,
            self.running,
            self.conversation,
            self.item,
        ]


def unknown_ids() -> Owned:
    """Ids of the shapes LGOS hands out (a paused Response and its call name their run), so
    that only whose they are differs."""
    paused_run = ids.new_hex()
    return Owned(
        response=ids.response_id(),
        paused=str(ids.run_response_id(paused_run)),
        call_id=interrupt_call_id(paused_run, ids.new_hex()),
        finished=str(ids.run_response_id(ids.new_hex())),
        streamed=str(ids.run_response_id(ids.new_hex())),
        running=str(ids.run_response_id(ids.new_hex())),
        conversation=ids.conversation_id(),
        item=ids.message_id(),
    )


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def _post(
    http: httpx2.AsyncClient, credentials: dict[str, str], path: str, body: Any
) -> dict[str, Any]:
    reply = await http.post(path, json=body, headers=credentials)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()
    return result


async def _wait_finished(
    http: httpx2.AsyncClient, credentials: dict[str, str], response_id: str
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while True:
        reply = await http.get(f"/v1/responses/{response_id}", headers=credentials)
        if reply.json().get("status") == "completed":
            return
        assert loop.time() < deadline, f"background response still {reply.json()['status']}"
        await asyncio.sleep(0.05)


async def _streamed_background(http: httpx2.AsyncClient, credentials: dict[str, str]) -> str:
    """A background Response created with stream=true, read to its end; its id."""
    body = {
        "model": "background-mock",
        "input": "z",
        "background": True,
        "stream": True,
        "metadata": NO_DELAY,
    }
    reply = await http.post("/v1/responses", json=body, headers=credentials)
    assert reply.status_code == 200, reply.text
    first = next(line for line in reply.text.splitlines() if line.startswith("data: "))
    response_id: str = json.loads(first.removeprefix("data: "))["response"]["id"]
    return response_id


async def create_objects(http: httpx2.AsyncClient, credentials: dict[str, str]) -> Owned:
    """One of each object an owner can have, created with the owner's credentials (the
    headers that authenticate it: its key, and the user a gateway's key names)."""
    stored = await _post(
        http,
        credentials,
        "/v1/responses",
        {"model": "simple-graph", "input": "hello", "store": True},
    )
    paused = await _post(
        http, credentials, "/v1/responses", {"model": "interruptible-approval", "input": "the plan"}
    )
    (call,) = [item for item in paused["output"] if item["type"] == "function_call"]
    finished = await _post(
        http,
        credentials,
        "/v1/responses",
        {"model": "background-mock", "input": "x", "background": True, "metadata": NO_DELAY},
    )
    running = await _post(
        http,
        credentials,
        "/v1/responses",
        {"model": "background-mock", "input": "y", "background": True, "metadata": LONG_DELAY},
    )
    streamed = await _streamed_background(http, credentials)
    conversation = await _post(
        http,
        credentials,
        "/v1/conversations",
        {"items": [{"type": "message", "role": "user", "content": "a secret"}]},
    )
    items = await http.get(f"/v1/conversations/{conversation['id']}/items", headers=credentials)
    (item,) = items.json()["data"]
    await _wait_finished(http, credentials, finished["id"])
    return Owned(
        response=stored["id"],
        paused=paused["id"],
        call_id=call["call_id"],
        finished=finished["id"],
        streamed=streamed,
        running=running["id"],
        conversation=conversation["id"],
        item=item["id"],
    )


@dataclass(frozen=True)
class Ask:
    """One request; `json` None sends no body."""

    method: str
    url: str
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Builder = Callable[[Owned], Ask]


@dataclass(frozen=True)
class Case:
    """How to ask one route about an owner's objects, and what its owner gets (`own`).

    `by_id`: whether the request names an object; if so, another owner's objects and unknown
    ones must both get `missing` (status), with the same body up to the ids. `destructive`:
    the owner's own request changes the objects, so it runs on fresh ones. `public`: every
    caller, keyed or not, gets `own`.
    """

    name: str
    build: Builder
    own: int
    by_id: bool = True
    missing: int = 404
    destructive: bool = False
    public: bool = False


def _ask(method: str, url: str, body: Any = None, **headers: str) -> Ask:
    return Ask(method, url, body, dict(headers))


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "matrix", "version": "1"},
    },
}
A2A_GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "unknown"}}


def _answer(ids: Owned) -> Ask:
    answer = [{"type": "function_call_output", "call_id": ids.call_id, "output": "approve"}]
    body = {"model": "interruptible-approval", "previous_response_id": ids.paused, "input": answer}
    return _ask("POST", "/v1/responses", body)


def _in_conversation(ids: Owned) -> Ask:
    body = {"model": "simple-graph", "input": "again", "conversation": ids.conversation}
    return _ask("POST", "/v1/responses", body)


RESPONSE = "/v1/responses/{response_id}"
CONVERSATION = "/v1/conversations/{conversation_id}"
ITEMS = "/v1/conversations/{conversation_id}/items"
ITEM = "/v1/conversations/{conversation_id}/items/{item_id}"
MESSAGE = {"type": "message", "role": "user", "content": "more"}

# (methods, path) of the route table → the cases that ask it.
EXPECTATIONS: dict[tuple[str, str], list[Case]] = {
    ("POST", "/v1/chat/completions"): [
        Case(
            "chat",
            lambda _: _ask(
                "POST",
                "/v1/chat/completions",
                {"model": "simple-graph", "messages": [{"role": "user", "content": "hi"}]},
            ),
            200,
            by_id=False,
        )
    ],
    ("POST", "/v1/responses"): [
        Case(
            "create",
            lambda _: _ask("POST", "/v1/responses", {"model": "simple-graph", "input": "hi"}),
            200,
            by_id=False,
        ),
        Case("answer a review", _answer, 200, missing=409, destructive=True),
        Case("continue a conversation", _in_conversation, 200, missing=404),
    ],
    ("GET", "/v1/models"): [Case("list", lambda _: _ask("GET", "/v1/models"), 200, by_id=False)],
    ("GET", "/v1/models/{model_id:path}"): [
        Case("get", lambda _: _ask("GET", "/v1/models/simple-graph"), 200, by_id=False)
    ],
    ("GET", RESPONSE): [
        Case("stored", lambda o: _ask("GET", f"/v1/responses/{o.response}"), 200),
        Case("paused", lambda o: _ask("GET", f"/v1/responses/{o.paused}"), 200),
        Case("background", lambda o: _ask("GET", f"/v1/responses/{o.finished}"), 200),
        Case(
            "background replay",
            lambda o: _ask("GET", f"/v1/responses/{o.streamed}?stream=true"),
            200,
        ),
    ],
    ("DELETE", RESPONSE): [
        Case(
            "stored", lambda o: _ask("DELETE", f"/v1/responses/{o.response}"), 200, destructive=True
        ),
    ],
    ("GET", RESPONSE + "/input_items"): [
        Case("stored", lambda o: _ask("GET", f"/v1/responses/{o.response}/input_items"), 200),
    ],
    ("POST", RESPONSE + "/cancel"): [
        Case(
            "running",
            lambda o: _ask("POST", f"/v1/responses/{o.running}/cancel"),
            200,
            destructive=True,
        ),
    ],
    ("POST", "/v1/conversations"): [
        Case("create", lambda _: _ask("POST", "/v1/conversations", {}), 200, by_id=False)
    ],
    ("GET", CONVERSATION): [
        Case("get", lambda o: _ask("GET", f"/v1/conversations/{o.conversation}"), 200)
    ],
    ("POST", CONVERSATION): [
        Case(
            "update",
            lambda o: _ask("POST", f"/v1/conversations/{o.conversation}", {"metadata": {"a": "b"}}),
            200,
        )
    ],
    ("DELETE", CONVERSATION): [
        Case(
            "delete",
            lambda o: _ask("DELETE", f"/v1/conversations/{o.conversation}"),
            200,
            destructive=True,
        ),
    ],
    ("GET", ITEMS): [
        Case("list", lambda o: _ask("GET", f"/v1/conversations/{o.conversation}/items"), 200)
    ],
    ("POST", ITEMS): [
        Case(
            "add",
            lambda o: _ask(
                "POST", f"/v1/conversations/{o.conversation}/items", {"items": [MESSAGE]}
            ),
            200,
        )
    ],
    ("GET", ITEM): [
        Case(
            "get",
            lambda o: _ask("GET", f"/v1/conversations/{o.conversation}/items/{o.item}"),
            200,
        )
    ],
    ("DELETE", ITEM): [
        Case(
            "delete",
            lambda o: _ask("DELETE", f"/v1/conversations/{o.conversation}/items/{o.item}"),
            200,
            destructive=True,
        )
    ],
    ("GET", "/v1/health"): [
        Case("health", lambda _: _ask("GET", "/v1/health"), 200, by_id=False, public=True)
    ],
    ("GET", "/v1/version"): [
        Case("version", lambda _: _ask("GET", "/v1/version"), 200, by_id=False)
    ],
    ("DELETE,GET,PATCH,POST,PUT", "/v1/{path:path}"): [
        Case("unknown path", lambda _: _ask("GET", "/v1/nowhere"), 404, by_id=False)
    ],
    ("*", "/mcp"): [
        Case(
            "initialize",
            lambda _: _ask(
                "POST",
                "/mcp",
                MCP_INITIALIZE,
                accept="application/json, text/event-stream",
            ),
            200,
            by_id=False,
        )
    ],
}
# The demo registry's own routes (its document corpus, `demo/corpus_web.py`): a host's routes,
# which LGOS's hook does not guard (docs/security.md).
for corpus_path in ("/corpus/", "/corpus", "/corpus/{doc_id}"):
    EXPECTATIONS[("GET", corpus_path)] = [
        Case("host route", lambda _: _ask("GET", "/corpus"), 200, by_id=False, public=True)
    ]


def expectation_for(methods: str, path: str) -> list[Case] | None:
    if (methods, path) in EXPECTATIONS:
        return EXPECTATIONS[(methods, path)]
    # One A2A agent per graph, each with its card: the same expectations for every graph.
    if path.startswith("/a2a/") and path.endswith("/.well-known/agent-card.json"):
        return [Case("card", lambda _: _ask("GET", path), 200, by_id=False)]
    if methods == "POST" and path.startswith("/a2a/") and path.count("/") == 2:
        return [Case("rpc", lambda _: _ask("POST", path, A2A_GET_TASK), 200, by_id=False)]
    return None


def refusal(message: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }


NO_KEY_REFUSAL = refusal(MISSING_KEY)
WRONG_KEY_REFUSAL = refusal(WRONG_KEY)


def normalized(text: str, ids: Owned) -> str:
    """A reply with the ids it names replaced by placeholders (another owner's id and an
    unknown one must read the same once their ids are out)."""
    for position, value in enumerate(ids.values):
        text = text.replace(value, f"<id {position}>")
    return text


def json_or_text(reply: httpx2.Response) -> Any:
    try:
        return reply.json()
    except json.JSONDecodeError:
        return reply.text
