"""Graphs that misbehave on purpose when answered, served by the real app (create_app)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from pydantic import BaseModel

from lgos import (
    GraphConfig,
    GraphFeature,
    GraphRegistry,
    InvalidAnswerError,
    ServerResources,
    ServerSettings,
    create_app,
)
from tests.support.graphs import linear_graph, single_node
from tests.support.postgres import temporary_database

REFUSAL = "Answer 'approve' or 'reject'."
FEATURES = frozenset({GraphFeature.INTERRUPTS, GraphFeature.BACKGROUND})


@dataclass
class Tracker:
    """What the graphs saw: every answer the asking node received, every later step."""

    answers: list[str] = field(default_factory=list)
    acted: list[str] = field(default_factory=list)
    typed_starts: int = 0
    waiting: asyncio.Event = field(default_factory=asyncio.Event)


class ReviewState(MessagesState):
    decision: str


def picky_graph(checkpointer: Any, tracker: Tracker) -> Pregel:
    """review refuses what it cannot use, crashes on "crash"; act crashes on "fail later"."""

    async def review(state: ReviewState) -> dict[str, Any]:
        answer = str(interrupt({"question": "Approve?", "choices": ["approve", "reject"]}))
        tracker.answers.append(answer)
        if answer == "crash":
            raise RuntimeError("a bug in the node that asked")
        if answer == "wait":
            tracker.waiting.set()
            await asyncio.Event().wait()  # until the run is cancelled
        if answer not in {"approve", "reject", "fail later"}:
            raise InvalidAnswerError(REFUSAL)
        return {"decision": answer}

    async def act(state: ReviewState) -> dict[str, Any]:
        tracker.acted.append(state["decision"])
        if state["decision"] == "fail later":
            raise RuntimeError("a bug after the review")
        return {"messages": [AIMessage(content=f"Decision: {state['decision']}.")]}

    return linear_graph({"review": review, "act": act}, ReviewState, checkpointer)


def nested_graph(checkpointer: Any, tracker: Tracker) -> Pregel:
    """The picky review inside a subgraph: the question is asked one level down."""
    return single_node(picky_graph(None, tracker), ReviewState, checkpointer=checkpointer)


class Seats(BaseModel):
    seats: int


def typed_graph(checkpointer: Any, tracker: Tracker) -> Pregel:
    async def book(state: MessagesState) -> dict[str, Any]:
        tracker.typed_starts += 1  # runs again on every resume that reaches the node
        seats = interrupt("How many seats?", response_schema=Seats)
        return {"messages": [AIMessage(content=f"Booked {seats.seats}.")]}

    return single_node(book, checkpointer=checkpointer)


def registry_for(tracker: Tracker) -> Any:
    def create_registry(resources: ServerResources) -> GraphRegistry:
        checkpointer = resources.checkpointer
        return GraphRegistry(
            graphs={
                "picky": GraphConfig(
                    graph=picky_graph(checkpointer, tracker),
                    description="Refuses or crashes on some answers",
                    features=FEATURES,
                ),
                "nested": GraphConfig(
                    graph=nested_graph(checkpointer, tracker),
                    description="Asks from a subgraph",
                    features=FEATURES,
                ),
                "typed": GraphConfig(
                    graph=typed_graph(checkpointer, tracker),
                    description="Asks for a number of seats",
                    features=FEATURES,
                ),
            },
            run_coordinator=resources.run_coordinator,
        )

    return create_registry


@contextmanager
def persistence(kind: str) -> Iterator[str | None]:
    """None for the embedded in-memory default, or a fresh PostgreSQL database's URI."""
    if kind == "memory":
        yield None
        return
    with temporary_database() as uri:
        yield uri


@asynccontextmanager
async def running_app(tracker: Tracker, postgres_uri: str | None) -> AsyncIterator[FastAPI]:
    app = create_app(
        registry_for(tracker),
        settings=ServerSettings(
            POSTGRES_URI=postgres_uri, BACKGROUND="memory", INTERRUPT_SWEEP_INTERVAL_MINUTES=0
        ),
    )
    async with app.router.lifespan_context(app):
        yield app
