"""`chat`: one model call that streams its answer; the tone is a per-request setting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from lgos import ClientSettings, get_request

from {{ cookiecutter.project_slug }}.models import last_user_text


class ChatSettings(ClientSettings):
    """Sent by clients as `metadata.lgos_settings` (JSON), checked on every request.

    `GET /v1/models/chat` publishes the JSON Schema and the defaults, so UIs can show a form.
    """

    tone: Literal["friendly", "formal"] = "friendly"


_INSTRUCTIONS = {
    "friendly": "Answer in one or two warm, plain sentences.",
    "formal": "Answer in one or two sentences, in a formal register.",
}
_FAKE_OPENINGS = {"friendly": "Happy to help!", "formal": "Certainly."}


def settings() -> ChatSettings:
    current = get_request().settings
    assert isinstance(current, ChatSettings), "the registry declares ChatSettings for chat"
    return current


def fake_answer(messages: Sequence[BaseMessage]) -> str:
    """What the deterministic fake model says: the tone shows, so tests can see the setting."""
    question = last_user_text(messages) or "nothing"
    return f"{_FAKE_OPENINGS[settings().tone]} You said: {question}"


def chat_graph(model: BaseChatModel) -> Pregel:
    async def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
        instructions = SystemMessage(_INSTRUCTIONS[settings().tone])
        # LGOS streams the model's tokens as they come; the returned message completes them.
        return {"messages": [await model.ainvoke([instructions, *state["messages"]])]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile()
