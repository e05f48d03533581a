"""`everything-agent`: one model call that receives every part of the request LGOS carries.

The node binds the client's tools with its `tool_choice` and `parallel_tool_calls`, the requested
answer shape as `response_format` and the reasoning options as `reasoning`, and sends the
messages as they arrived (images and files as LangChain content blocks, replayed reasoning as
reasoning blocks). The model is the deterministic `AgentChatModel` unless DEMO_OPENAI_* configure
a real one, which gets the same options through LangChain's own `ChatOpenAI`, on the Responses
API of the configured server.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel

from demo.graphs.agent_model import AgentChatModel
from demo.graphs.models import configured_real_model
from lgos import AllowedTools, GraphRequest, HostedToolChoice, NamedToolChoice, get_request


def langchain_tool_choice(request: GraphRequest) -> Any:
    """The request's `tool_choice` in a form `bind_tools` takes: a named function in the Chat
    Completions form (`ChatOpenAI` converts it), `allowed_tools` in the Responses form, which
    `ChatOpenAI` sends on unchanged."""
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    if isinstance(choice, AllowedTools):
        functions = [{"type": "function", "name": name} for name in choice.names]
        return {"type": "allowed_tools", "mode": choice.mode, "tools": functions}
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
    reasoning = request.reasoning
    if reasoning is not None:
        options = {"effort": reasoning.effort, "summary": reasoning.summary}
        present = {key: value for key, value in options.items() if value is not None}
        bound = bound.bind(reasoning=present)  # type: ignore[attr-defined]
    return bound


def agent_model() -> BaseChatModel:
    """The deterministic fake, or the configured real model on the Responses API.

    `ChatOpenAI` sends a `response_format` over Chat Completions through the SDK's parse
    helper, which refuses every function tool that is not strict, and Chat Completions brings
    no reasoning summaries back; its Responses API mode has neither limit (the server must
    serve /v1/responses, as OpenAI, LGOS, LiteLLM, vLLM and Ollama do).
    """
    real = configured_real_model()
    if real is None:
        return AgentChatModel()
    return real.model_copy(update={"use_responses_api": True})


def everything_agent_graph() -> Pregel:
    model = agent_model()

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        answer = await bound_model(model, get_request()).ainvoke(state["messages"])
        assert isinstance(answer, AIMessage)
        return {"messages": [answer]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile()
