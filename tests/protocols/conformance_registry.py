"""Graphs named after the MCP conformance suite's fixture tools, each built on the LGOS
feature that scenario exercises: a plain answer, status events (progress), a failing node
(an error result), a question with a typed answer (an elicitation with defaults), and client
settings with nested models (a JSON Schema 2020-12 input schema)."""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict

from lgos import (
    ClientSettings,
    GraphConfig,
    GraphFeature,
    GraphRegistry,
    ServerResources,
    status_event,
)
from tests.support.graphs import single_node


async def _simple_text(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content="This is a simple text response for testing.")]}


async def _with_progress(state: MessagesState) -> dict[str, Any]:
    for step in ("Started", "Halfway", "Done"):
        status_event(step)
    return {"messages": [AIMessage(content="Progress reported three times.")]}


async def _failing(state: MessagesState) -> dict[str, Any]:
    raise RuntimeError("This tool intentionally returns an error for testing")


class Profile(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


async def _asks_with_defaults(state: MessagesState) -> dict[str, Any]:
    profile = interrupt({"question": "Your profile?"}, response_schema=Profile)
    content = json.dumps(profile.model_dump())
    return {
        "messages": [AIMessage(content=f"Elicitation completed: action=accept, content={content}")]
    }


class Address(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    street: str = ""
    city: str = ""


class AddressSettings(ClientSettings):
    name: str = ""
    address: Address = Address()


async def _echo_name(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content="ok")]}


def create_registry(resources: ServerResources) -> GraphRegistry:
    checkpointer = resources.checkpointer
    return GraphRegistry(
        graphs={
            "test_simple_text": GraphConfig(
                graph=single_node(_simple_text), description="Answers with a fixed text."
            ),
            "test_tool_with_progress": GraphConfig(
                graph=single_node(_with_progress), description="Reports three status events."
            ),
            "test_error_handling": GraphConfig(
                graph=single_node(_failing), description="Fails in its only node."
            ),
            "test_elicitation_sep1034_defaults": GraphConfig(
                graph=single_node(_asks_with_defaults, checkpointer=checkpointer),
                description="Asks for a profile whose every field has a default.",
                features=frozenset({GraphFeature.INTERRUPTS}),
            ),
            "json_schema_2020_12_tool": GraphConfig(
                graph=single_node(_echo_name),
                description="Tool with JSON Schema 2020-12 features",
                client_settings=AddressSettings,
            ),
        },
        run_coordinator=resources.run_coordinator,
    )
