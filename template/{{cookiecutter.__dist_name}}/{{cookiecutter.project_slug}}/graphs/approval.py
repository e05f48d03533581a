"""`approval`: prepare an action, ask a person to approve it, then carry it out (or not).

The question is an `interrupt()`: the Response completes with an `lgos_interrupt` function call,
and the client answers with a `function_call_output` and `previous_response_id`. The paused run
lives in the checkpointer LGOS passes in (PostgreSQL when `LGOS_POSTGRES_URI` is set), so the
answer may come days later, to another replica.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from lgos import status_event

from {{ cookiecutter.project_slug }}.models import last_user_text

CHOICES = ("approve", "reject")


class ApprovalState(MessagesState):
    action: str
    decision: str
    comment: str


async def prepare(state: ApprovalState) -> dict[str, Any]:
    status_event("Preparing the action")
    return {"action": last_user_text(state["messages"]).strip() or "the request"}


async def review(state: ApprovalState) -> dict[str, Any]:
    # LangGraph runs this node again from its top when the answer arrives, so it does nothing
    # but ask: the side effect waits for `act`.
    answer = interrupt(
        {
            "question": f"Go ahead with '{state['action']}'?",
            "choices": list(CHOICES),
            "allow_other": True,
        }
    )
    text = str(answer).strip()
    if text.lower() in CHOICES:
        return {"decision": text.lower(), "comment": ""}
    return {"decision": "comment", "comment": text}


async def act(state: ApprovalState) -> dict[str, Any]:
    if state["decision"] == "approve":
        # Replace this with the real work (a ticket, an email, a deployment).
        text = f"Done: {state['action']}."
    elif state["decision"] == "reject":
        text = f"Not done: '{state['action']}' was rejected."
    else:
        text = f"Not done; your comment was noted: {state['comment']}"
    return {"messages": [AIMessage(content=text)]}


def approval_graph(checkpointer: Any) -> Pregel:
    builder = StateGraph(ApprovalState)
    builder.add_node("prepare", prepare)
    builder.add_node("review", review)
    builder.add_node("act", act)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "review")
    builder.add_edge("review", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=checkpointer)
