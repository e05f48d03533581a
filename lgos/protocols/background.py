"""An agent protocol's long task as a background Response of the engine: what A2A's background
tasks and MCP's tasks share.

The task is submitted as `POST /v1/responses` with `background` would be (through
`BackgroundResponses`, so the same checks, owner scope and engine apply), its id is the
Response id (any API process answers for it, after a restart too), and its answer is read
back from the Response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from lgos.core.client_settings import SETTINGS_KEY
from lgos.core.errors import SERVER_ERROR_MESSAGE
from lgos.core.registry import GraphConfig, GraphFeature
from lgos.core.request import GraphRequest
from lgos.service.background import BackgroundResponses
from lgos.wire import ids, responses_decoder
from lgos.wire.interrupts import INTERRUPT_FUNCTION
from lgos.wire.responses_decoder import DecodedResponsesRequest


def can_run_in_background(config: GraphConfig, background: BackgroundResponses | None) -> bool:
    """A graph that may run in the background, on a server with an engine."""
    return (
        background is not None
        and background.backend is not None
        and config.supports(GraphFeature.BACKGROUND)
    )


def background_request(
    model: str, request: GraphRequest, metadata: Mapping[str, str], *, stream: bool
) -> DecodedResponsesRequest:
    """The background Responses request that runs `request` (an LgosError when it is refused)."""
    kept: dict[str, JsonValue] = dict(metadata)
    if request.settings is not None:
        kept[SETTINGS_KEY] = request.settings.model_dump_json()
    body: dict[str, JsonValue] = {
        "model": model,
        "input": request.messages[0].text if request.messages else "",
        "background": True,
        "metadata": kept,
    }
    if stream:
        body["stream"] = True
    answer = request.response_format
    if answer is not None and answer.schema is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": answer.name or "answer",
                "schema": dict(answer.schema),
                "strict": answer.strict,
            }
        }
    return responses_decoder.decode(body)


def answer_request(
    model: str,
    paused_id: str,
    answers: Mapping[str, str],
    metadata: Mapping[str, str],
    *,
    stream: bool,
) -> DecodedResponsesRequest:
    """The background Responses request that answers the pause of Response `paused_id`
    (review id → answer), as an OpenAI client would: `previous_response_id` and one
    `function_call_output` per question. The worker checks the answers against the pause."""
    body: dict[str, JsonValue] = {
        "model": model,
        "previous_response_id": paused_id,
        "input": [
            {"type": "function_call_output", "call_id": call_id, "output": output}
            for call_id, output in answers.items()
        ],
        "background": True,
        "metadata": dict(metadata),
    }
    if stream:
        body["stream"] = True
    return responses_decoder.decode(body)


def interrupt_calls(response: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A paused Response's questions: (call id, arguments JSON) of each `lgos_interrupt` call."""
    return [
        (str(item["call_id"]), str(item.get("arguments") or "null"))
        for item in response.get("output") or ()
        if item.get("type") == "function_call" and item.get("name") == INTERRUPT_FUNCTION
    ]


def refused(response: Mapping[str, Any]) -> bool:
    """A failed Response whose request was refused (an answer the graph or the question did
    not take, say: the worker fails it with the refusal's own message), not a run that broke
    (the generic server error)."""
    message = failure_message(response)
    return response.get("status") == "failed" and message not in (None, SERVER_ERROR_MESSAGE)


def answer_text(response: Mapping[str, Any]) -> str:
    """The Response's answer: its final-answer message text (commentary left out)."""
    return "".join(
        str(part.get("text") or "")
        for item in response.get("output") or ()
        if item.get("type") == "message" and item.get("phase") != "commentary"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
    )


def failure_message(response: Mapping[str, Any]) -> str | None:
    error = response.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return str(error["message"])
    return None


@dataclass(frozen=True, slots=True)
class Link:
    """One entry of a task's chain: an answer's Response and the paused Response it answers
    (or, `cancelled`, the task cancelled while it waited for an answer)."""

    response_id: str = ""
    answers: str = ""
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class ChainView:
    """A task as its chain and its Responses show it now."""

    links: list[Link]
    first: Mapping[str, Any]
    # The last Response (the first, until an answer joins), and, when that is an answer, the
    # paused Response it answered.
    latest: Mapping[str, Any]
    answered: Mapping[str, Any] | None
    cancelled: bool

    @property
    def paused(self) -> Mapping[str, Any] | None:
        """The Response whose questions wait for an answer now (None: none wait)."""
        if self.cancelled:
            return None
        if self.answered is not None and refused(self.latest):
            return self.answered  # the refused answer left its pause pending
        if self.latest.get("status") == "completed" and interrupt_calls(self.latest):
            return self.latest
        return None

    @property
    def note(self) -> str | None:
        """Why the questions are asked again: the refused answer's message."""
        if self.answered is not None and refused(self.latest):
            return failure_message(self.latest)
        return None


class TaskChain:
    """The Responses of protocol tasks that pause, in the engine's durable event log.

    A task that pauses needs several Responses: the first (whose id is the task id) and one per
    answer (`previous_response_id` the paused one). Its *chain* is kept under a key of the
    task's own in the event log (`key`): entry n is the n-th answer's Response and the pause it
    answers. An entry is written once (the log keeps the first event of a sequence number), so
    of two answers racing for one pause only one joins the task, and any API process, after a
    restart too, reads the same chain.
    """

    def __init__(self, background: BackgroundResponses) -> None:
        assert background.events is not None
        self.background = background
        self.log = background.events

    @staticmethod
    def key(task_id: str) -> str:
        """Not a run id of any engine, so never a Response's log."""
        parsed = ids.parse_run_response_id(task_id)
        assert parsed is not None
        return f"task-chain-{parsed.nonce}"

    async def view(self, task_id: str, owner_scope: str) -> ChainView:
        """NotFoundError for an unknown task id or another owner's."""
        first = await self.background.retrieve(task_id, owner_scope=owner_scope)
        links = [
            Link(
                response_id=str(entry.get("response_id") or ""),
                answers=str(entry.get("answers") or ""),
                cancelled=bool(entry.get("cancelled")),
            )
            for entry in await self.log.read(self.key(task_id), -1)
        ]
        answers = [link for link in links if not link.cancelled]
        latest: Mapping[str, Any] = first
        answered: Mapping[str, Any] | None = None
        if answers:
            latest = await self.background.retrieve(
                answers[-1].response_id, owner_scope=owner_scope
            )
            answered = await self.background.retrieve(answers[-1].answers, owner_scope=owner_scope)
        cancelled = bool(links) and links[-1].cancelled
        return ChainView(links, first, latest, answered, cancelled)

    async def join(self, task_id: str, view: ChainView, response_id: str) -> bool:
        """Add an answer's Response to the chain read as `view` (it answers `view.paused`);
        False when another answer joined first."""
        assert view.paused is not None
        index = len(view.links)
        entry = {"sequence_number": index, "response_id": response_id, "answers": view.paused["id"]}
        await self.log.append(self.key(task_id), [entry])
        written = await self.log.read(self.key(task_id), index - 1)
        return bool(written) and written[0].get("response_id") == response_id

    async def cancel_waiting(self, task_id: str, view: ChainView) -> None:
        """End a task that waits for an answer: nothing runs, so the chain records the end
        (the paused checkpoint expires as an unanswered OpenAI pause does)."""
        entry = {"sequence_number": len(view.links), "cancelled": True}
        await self.log.append(self.key(task_id), [entry])
