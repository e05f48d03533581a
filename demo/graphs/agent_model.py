"""A deterministic chat model that behaves like a tool-calling, multimodal, reasoning model.

It stands in for a real model in the `everything-agent` graph: it takes the tools bound with
`bind_tools` and obeys `tool_choice` and `parallel_tool_calls`, answers in the JSON schema bound
as `response_format`, describes the images and files it was shown (type, size, dimensions) and
says what it thought in a reasoning block. Everything it says is computed from its input, so
tests can assert it exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from demo.graphs.fake_model import split_tokens, word_usage
from demo.graphs.media import describe_blocks


class AgentChatModel(BaseChatModel):
    """Binds tools and a response format the way `ChatOpenAI` does (as call kwargs)."""

    @property
    def _llm_type(self) -> str:
        return "lgos-demo-agent"

    def bind_tools(
        self,
        tools: Sequence[Mapping[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: Any = None,
        parallel_tool_calls: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        bound: dict[str, Any] = {"tools": [convert_to_openai_tool(tool) for tool in tools]}
        if tool_choice is not None:
            bound["tool_choice"] = tool_choice
        if parallel_tool_calls is not None:
            bound["parallel_tool_calls"] = parallel_tool_calls
        return self.bind(**bound, **kwargs)

    def _reply(self, messages: Sequence[BaseMessage], kwargs: Mapping[str, Any]) -> AIMessage:
        plan = Plan(messages, kwargs)
        calls = plan.tool_calls()
        content: list[dict[str, Any]] = [{"type": "reasoning", "reasoning": plan.reasoning(calls)}]
        if calls:
            return AIMessage(content=content, tool_calls=calls)
        content.append({"type": "text", "text": plan.answer()})
        return AIMessage(content=content)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._reply(messages, kwargs)
        message.usage_metadata = _usage(messages, message)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _chunks(self, messages: list[BaseMessage], kwargs: Mapping[str, Any]) -> list[Any]:
        message = self._reply(messages, kwargs)
        reasoning, *rest = message.content
        chunks = [AIMessageChunk(content=[{**reasoning, "index": 0}])]  # type: ignore[dict-item]
        if message.tool_calls:
            chunks.append(
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "name": call["name"],
                            "args": json.dumps(call["args"]),
                            "id": call["id"],
                            "index": index,
                            "type": "tool_call_chunk",
                        }
                        for index, call in enumerate(message.tool_calls)
                    ],
                )
            )
        else:
            text = rest[0]["text"]  # type: ignore[index]
            chunks.extend(
                AIMessageChunk(content=[{"type": "text", "text": token, "index": 1}])
                for token in split_tokens(text)
            )
        chunks.append(AIMessageChunk(content="", usage_metadata=_usage(messages, message)))
        return chunks

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, kwargs):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, kwargs):
            generation = ChatGenerationChunk(message=chunk)
            if run_manager is not None and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=generation)
            yield generation


def _usage(messages: Sequence[BaseMessage], message: AIMessage) -> Any:
    usage = word_usage(messages, message.text)
    reasoning = next(
        (block["reasoning"] for block in message.content_blocks if block["type"] == "reasoning"),
        "",
    )
    spent = len(split_tokens(str(reasoning)))
    usage["output_tokens"] += spent
    usage["total_tokens"] += spent
    usage["output_token_details"] = {"reasoning": spent}
    return usage


class Plan:
    """What the fake does with one conversation and the options bound to it."""

    def __init__(self, messages: Sequence[BaseMessage], options: Mapping[str, Any]) -> None:
        self.messages = messages
        self.tools = [tool["function"] for tool in options.get("tools") or ()]
        self.tool_choice = options.get("tool_choice") or "auto"
        self.parallel = options.get("parallel_tool_calls") is not False
        self.response_format = options.get("response_format")
        self.effort = (options.get("reasoning") or {}).get("effort")
        self.question = _last_human_text(messages)
        self.results = _trailing_tool_results(messages)
        self.replayed_reasoning = sum(
            any(block["type"] == "reasoning" for block in message.content_blocks)
            for message in messages
            if message.type == "ai"
        )

    def tool_calls(self) -> list[Any]:
        """Calls for the tools the choice allows, unless this turn already has their results."""
        if self.results or not self.tools:
            return []
        choice = self.tool_choice
        allowed = self.tools
        if isinstance(choice, Mapping) and choice.get("type") == "allowed_tools":
            spec = choice.get("allowed_tools", choice)
            names = {tool.get("function", tool).get("name") for tool in spec.get("tools", ())}
            allowed = [tool for tool in self.tools if tool["name"] in names]
            choice = spec.get("mode", "auto")
        if choice == "none" or not allowed:
            return []
        if isinstance(choice, Mapping):  # a named function
            name = choice.get("function", choice).get("name")
            allowed = [tool for tool in allowed if tool["name"] == name]
            chosen = allowed[:1]
        else:
            chosen = self._relevant(allowed)
            if not chosen and choice == "required":
                chosen = allowed[:1]
        if not self.parallel:
            chosen = chosen[:1]
        return [
            {
                "id": f"call_{index}_{tool['name']}"[:40],
                "name": tool["name"],
                "args": example_value(tool.get("parameters") or {}, self.question),
                "type": "tool_call",
            }
            for index, tool in enumerate(chosen)
        ]

    def _relevant(self, tools: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The tools whose name shares a word with the question; with no match, the first
        one when the question asks to use a tool."""
        words = set(re.findall(r"[a-z0-9]+", self.question.lower()))
        matching = [
            tool for tool in tools if words & set(re.findall(r"[a-z0-9]+", tool["name"].lower()))
        ]
        if matching:
            return matching
        return tools[:1] if {"tool", "tools", "function", "call"} & words else []

    def reasoning(self, calls: list[Any]) -> str:
        effort = f" Effort: {self.effort}." if self.effort else ""
        if calls:
            names = ", ".join(call["name"] for call in calls)
            return f"The question needs {names}, so I call it first.{effort}"
        if self.results:
            after = ""
            if self.replayed_reasoning:
                after = f", after {self.replayed_reasoning} earlier reasoning item(s)"
            return f"I have {len(self.results)} tool result(s) to answer from{after}.{effort}"
        return f"I read the question and answer it directly.{effort}"

    def description(self) -> str:
        parts = []
        if self.results:
            parts.append("Tool results: " + "; ".join(self.results) + ".")
        last_human = next((m for m in reversed(self.messages) if m.type == "human"), None)
        attachments = describe_blocks(last_human.content_blocks) if last_human else []
        if attachments:
            parts.append("I received " + "; ".join(attachments) + ".")
        parts.append(f"You asked: {self.question}" if self.question else "You asked nothing.")
        return " ".join(parts)

    def answer(self) -> str:
        text = self.description()
        response_format = self.response_format
        if not isinstance(response_format, Mapping) or response_format.get("type") == "text":
            return text
        if response_format.get("type") == "json_object":
            return json.dumps({"answer": text})
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        return json.dumps(example_value(schema, self.question, text))


def _last_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return message.text
    return ""


def _trailing_tool_results(messages: Sequence[BaseMessage]) -> list[str]:
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, message.text)
    return results


_TEXT_FIELDS = {"answer", "summary", "description", "text", "content", "reply", "message"}


def example_value(
    schema: Mapping[str, Any], question: str, text: str = "", *, root: Any = None, key: str = ""
) -> Any:
    """A value that matches `schema`, drawn from the question where a string is wanted."""
    root = schema if root is None else root
    if "$ref" in schema:
        return example_value(_resolve(root, schema["$ref"]), question, text, root=root, key=key)
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            options = [option for option in schema[combinator] if option.get("type") != "null"]
            chosen = options[0] if options else {"type": "null"}
            return example_value(chosen, question, text, root=root, key=key)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((option for option in kind if option != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: example_value(prop, question, text, root=root, key=name)
            for name, prop in properties.items()
        }
    if kind == "array":
        item = example_value(schema.get("items") or {}, question, text, root=root, key=key)
        return [item] * max(1, int(schema.get("minItems", 1)))
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _example_string(schema, key, question, text)


def _example_string(schema: Mapping[str, Any], key: str, question: str, text: str) -> str:
    if schema.get("format") == "date":
        return "2026-01-01"
    if schema.get("format") == "date-time":
        return "2026-01-01T00:00:00Z"
    if key.lower() in _TEXT_FIELDS and text:
        return text
    names = re.findall(r"\b[A-Z][a-z]+\b", question)
    return names[-1] if names else (question or "example")


def _resolve(root: Any, reference: str) -> Mapping[str, Any]:
    target = root
    for part in reference.removeprefix("#/").split("/"):
        target = target[part]
    return target  # type: ignore[no-any-return]
