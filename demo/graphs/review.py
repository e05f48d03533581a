"""Graphs that pause for a person, and the background demos."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from pydantic import Field

from demo.graphs.fake_model import last_user_text
from lgos import ClientSettings, InvalidAnswerError, get_request, status_event


class ApprovalState(MessagesState):
    topic: str
    decision: str
    feedback: str


def interruptible_approval_graph(
    checkpointer: Any, side_effects: list[str] | None = None
) -> Pregel:
    """announce → review → act. The side effect happens only after the review, in its own node,
    because LangGraph re-runs an interrupted node from its top when it resumes."""
    effects = side_effects if side_effects is not None else []

    async def announce(state: ApprovalState) -> dict[str, Any]:
        return {"topic": last_user_text(state["messages"]) or "the request"}

    async def review(state: ApprovalState) -> dict[str, Any]:
        answer = interrupt(
            {
                "question": f"Approve publishing '{state['topic']}'?",
                "choices": ["approve", "reject"],
                "allow_other": True,
                # A client may offer "always approve publishing" for a session.
                "kind": "publishing",
                "always": "approve",
            }
        )
        text = str(answer).strip()
        decision = text.lower() if text.lower() in {"approve", "reject"} else "feedback"
        return {"decision": decision, "feedback": text if decision == "feedback" else ""}

    async def act(state: ApprovalState) -> dict[str, Any]:
        if state["decision"] == "approve":
            effects.append(state["topic"])
            text = f"Published '{state['topic']}'."
        elif state["decision"] == "reject":
            text = f"Rejected: '{state['topic']}' was not published."
        else:
            text = f"Not published; your feedback was noted: {state['feedback']}"
        return {"messages": [AIMessage(content=text)]}

    builder = StateGraph(ApprovalState)
    builder.add_node("announce", announce)
    builder.add_node("review", review)
    builder.add_node("act", act)
    builder.add_edge(START, "announce")
    builder.add_edge("announce", "review")
    builder.add_edge("review", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=checkpointer)


class DelaySettings(ClientSettings):
    delay_seconds: int = Field(default=5, ge=0, le=300)


def _delay() -> int:
    settings = get_request().settings
    return settings.delay_seconds if isinstance(settings, DelaySettings) else 0


def report_for(topic: str) -> str:
    return f"Background report for: {topic}"


def background_mock_graph() -> Pregel:
    """Wait `delay_seconds`, then answer with a report."""

    async def work(state: MessagesState) -> dict[str, list[BaseMessage]]:
        status_event("Preparing the report")
        await asyncio.sleep(_delay())
        return {"messages": [AIMessage(content=report_for(last_user_text(state["messages"])))]}

    builder = StateGraph(MessagesState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder.compile()


class ReportState(MessagesState):
    topic: str
    report: str
    approved: bool


def background_interrupt_graph(checkpointer: Any) -> Pregel:
    """prepare_report → review_report (approve/reject) → finish_report."""

    async def prepare_report(state: ReportState) -> dict[str, Any]:
        topic = last_user_text(state["messages"]) or "the request"
        await asyncio.sleep(_delay())
        return {"topic": topic, "report": report_for(topic)}

    async def review_report(state: ReportState) -> dict[str, Any]:
        answer = interrupt(
            {
                "question": "Approve the prepared report?",
                "choices": ["approve", "reject"],
                "report": state["report"],
            }
        )
        decision = str(answer).strip().lower()
        if decision not in {"approve", "reject"}:
            # Refused, and asked again: the report stays up for review under the same call id.
            raise InvalidAnswerError(f"Answer 'approve' or 'reject', not {str(answer)!r}.")
        return {"approved": decision == "approve"}

    async def finish_report(state: ReportState) -> dict[str, Any]:
        if not state["approved"]:
            return {
                "messages": [AIMessage(content=f"The report on '{state['topic']}' was rejected.")]
            }
        await asyncio.sleep(_delay())
        return {"messages": [AIMessage(content=state["report"])]}

    builder = StateGraph(ReportState)
    builder.add_node("prepare_report", prepare_report)
    builder.add_node("review_report", review_report)
    builder.add_node("finish_report", finish_report)
    builder.add_edge(START, "prepare_report")
    builder.add_edge("prepare_report", "review_report")
    builder.add_edge("review_report", "finish_report")
    builder.add_edge("finish_report", END)
    return builder.compile(checkpointer=checkpointer)
