"""deep-research's real-model path: prompts, parallel tool calls, model-written citations.

A stand-in for a hosted model answers by the role its system prompt gives it, the way a real
model would: it returns numbered plans, several tool calls at once (one of them to a tool that
does not exist), and a report with its own `[n]` markers. The graph must parse all of that.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field

import demo.graphs.deep_research as deep_research
from demo.corpus import default_corpus
from demo.graphs.fake_model import split_tokens
from tests.demo.support import demo_app, review_calls
from tests.support.sdk import in_process_sdk

pytestmark = pytest.mark.anyio

CORPUS = default_corpus()
INCIDENT = CORPUS.documents["candlemas-incident"]
DESIGN = CORPUS.documents["kite-design"]
BODY = (
    "## Findings\n\n"
    "Kite 14 lost its tether in a storm surge [1]. "
    "Tethers are now rated for 420 kilonewtons. [2][1]\n"
)


class RoleModel(BaseChatModel):
    """Answers by role, read from the system prompt; records what the researcher saw."""

    seen_by_researcher: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "test-role-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        self.bound_tools.extend(tool.name for tool in tools)
        return self

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        role = messages[0].text
        if role.startswith("You plan research"):
            return AIMessage("1) What broke in the Candlemas storm?\n2) What changed afterwards?")
        if role.startswith("You research"):
            self.seen_by_researcher.append(list(messages))
            results = [m for m in messages if isinstance(m, ToolMessage)]
            if not results:
                return _calls(
                    ("search_corpus", {"query": "Candlemas storm tether"}),
                    ("web_search", {"query": "tidal kites"}),
                )
            if len(results) == 2:
                return _calls(
                    ("read_document", {"doc_id": "candlemas-incident"}),
                    ("read_document", {"doc_id": "kite-design"}),
                    ("read_document", {"doc_id": "no-such-document"}),
                )
            return AIMessage("I have what I need.")
        assert role.startswith("Write a concise research report")
        assert f"[1] {INCIDENT.title} ({INCIDENT.url})" in role
        return AIMessage(BODY)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self.reply(messages)
        if message.tool_calls:
            chunks = [
                {"id": c["id"], "name": c["name"], "args": json.dumps(c["args"]), "index": i}
                for i, c in enumerate(message.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))
            return
        for token in split_tokens(message.text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk


def _calls(*calls: tuple[str, dict[str, str]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"id": f"call_{name}_{index}", "name": name, "args": args}
            for index, (name, args) in enumerate(calls)
        ],
    )


async def test_a_tool_calling_model_drives_the_same_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    model = RoleModel()
    monkeypatch.setattr(deep_research, "configured_real_model", lambda: model)
    app = demo_app()
    async with app.router.lifespan_context(app), in_process_sdk(app) as client:
        pending = await client.responses.create(model="deep-research", input="Storm damage")
        (call,) = review_calls(pending)
        plan = json.loads(call.arguments)["plan"]
        assert plan == "1. What broke in the Candlemas storm?\n2. What changed afterwards?"

        stream = await client.responses.create(
            model="deep-research",
            previous_response_id=pending.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "approve"}],
            stream=True,
        )
        commentary_ids: set[str] = set()
        progress: list[str] = []
        deltas: list[str] = []
        final = None
        async for event in stream:
            if event.type == "response.output_item.added" and event.item.type == "message":
                if event.item.phase == "commentary":
                    commentary_ids.add(event.item.id)
            elif event.type == "response.output_item.done" and event.item.type == "message":
                if event.item.phase == "commentary":
                    progress += [p.text for p in event.item.content if p.type == "output_text"]
            elif event.type == "response.output_text.delta":
                if event.item_id not in commentary_ids:
                    deltas.append(event.delta)
            elif event.type == "response.completed":
                final = event.response

    assert final is not None
    answer = next(i for i in final.output if i.type == "message" and i.phase != "commentary")
    part = answer.content[0]
    assert part.type == "output_text"
    sources = (
        f"## Sources\n\n1. [{INCIDENT.title}]({INCIDENT.url})\n2. [{DESIGN.title}]({DESIGN.url})\n"
    )
    assert part.text == BODY + "\n" + sources
    assert "".join(deltas) == part.text  # the model's report streamed, then the source list
    assert "Reading: Incident report: the Candlemas storm tether failure" in progress
    spans = [
        (a.url.partition("#")[0], part.text[a.start_index : a.end_index])
        for a in part.annotations
        if a.type == "url_citation"
    ]
    assert spans == [
        (INCIDENT.url, "Kite 14 lost its tether in a storm surge"),
        (DESIGN.url, "Tethers are now rated for 420 kilonewtons."),
        (INCIDENT.url, "Tethers are now rated for 420 kilonewtons."),
    ]
    # Both tools were offered; the unknown tool and the unknown document came back as results
    # the model could read, not as a crash.
    assert sorted(set(model.bound_tools)) == ["read_document", "search_corpus"]
    last_view = model.seen_by_researcher[-1]
    results = {m.tool_call_id: m for m in last_view if isinstance(m, ToolMessage)}
    assert results["call_web_search_1"].status == "error"
    assert "No document has the id 'no-such-document'" in results["call_read_document_2"].text
