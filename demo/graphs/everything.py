"""`everything-agent`: one model call that receives every part of the request LGOS carries.

The node binds the client's tools with its `tool_choice` and `parallel_tool_calls`, the requested
answer shape as `response_format`, and sends the messages as they arrived (images and files as
LangChain content blocks). The model is the deterministic `AgentChatModel` unless DEMO_OPENAI_*
configure a real one, which gets the same options through LangChain's own `ChatOpenAI`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel

from demo.graphs.agent_model import AgentChatModel
from demo.graphs.models import chat_model
from lgos import AllowedTools, GraphRequest, HostedToolChoice, NamedToolChoice, get_request


def langchain_tool_choice(request: GraphRequest) -> Any:
    """The request's `tool_choice` in the Chat Completions form `bind_tools` takes."""
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    if isinstance(choice, AllowedTools):
        functions = [{"type": "function", "function": {"name": name}} for name in choice.names]
        return {"type": "allowed_tools", "allowed_tools": {"mode": choice.mode, "tools": functions}}
    if isinstance(choice, HostedToolChoice):
        return "auto"  # this graph runs no hosted tools, so none can be chosen
    return choice


def bound_model(
    model: BaseChatModel, request: GraphRequest
) -> Runnable[LanguageModelInput, BaseMessage]:
    """`model` with the request's tools and answer shape bound, as a real agent would."""
    bound: Runnable[LanguageModelInput, BaseMessage] = model
    if request.tools:
        bound = model.bind_tools(
            [tool.as_openai_tool() for tool in request.tools],
            tool_choice=langchain_tool_choice(request),
            parallel_tool_calls=request.parallel_tool_calls,
        )
    answer_format = request.response_format
    if answer_format is not None:
        if answer_format.type == "json_object":
            response_format: dict[str, Any] = {"type": "json_object"}
        else:
            spec: dict[str, Any] = {"name": answer_format.name, "strict": answer_format.strict}
            if answer_format.schema is not None:
                spec["schema"] = dict(answer_format.schema)
            if answer_format.description is not None:
                spec["description"] = answer_format.description
            response_format = {"type": "json_schema", "json_schema": spec}
        bound = bound.bind(response_format=response_format)  # type: ignore[attr-defined]
    if request.reasoning is not None and request.reasoning.effort is not None:
        bound = bound.bind(reasoning_effort=request.reasoning.effort)  # type: ignore[attr-defined]
    return bound


def everything_agent_graph() -> Pregel:
    model = chat_model(AgentChatModel())

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        answer = await bound_model(model, get_request()).ainvoke(state["messages"])
        assert isinstance(answer, AIMessage)
        return {"messages": [answer]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile()
