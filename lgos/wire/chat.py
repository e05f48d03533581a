"""Chat Completions: request decoding, the completion object and its chunk stream."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import BaseModel, ConfigDict, Field

from lgos.errors import InvalidRequestError
from lgos.run.events import Citation, Finished, Interrupted, Usage
from lgos.run.request import ClientFunctionTool, ToolChoice
from lgos.wire import ids
from lgos.wire.errors import SERVER_ERROR_MESSAGE
from lgos.wire.messages import tool_call
from lgos.wire.responses import INTERRUPT_FUNCTION, interrupt_arguments
from lgos.wire.sse import data_event
from lgos.wire.tools import checked_tools, resolve_tool_choice
from lgos.wire.validation import (
    StrictBody,
    check_metadata,
    unsupported,
    unsupported_content,
    validate,
)


class TextPart(StrictBody):
    type: Literal["text"]
    text: str


class OtherPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


Content = str | list[Annotated[TextPart | OtherPart, Field(union_mode="left_to_right")]]


class SystemMessageIn(StrictBody):
    role: Literal["system", "developer"]
    content: Content
    name: str | None = None


class UserMessageIn(StrictBody):
    role: Literal["user"]
    content: Content
    name: str | None = None


class FunctionIn(StrictBody):
    name: str
    arguments: str


class ToolCallIn(StrictBody):
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionIn


class AssistantMessageIn(StrictBody):
    role: Literal["assistant"]
    content: Content | None = None
    tool_calls: list[ToolCallIn] | None = None
    refusal: str | None = None
    name: str | None = None
    function_call: None = None
    audio: None = None
    annotations: list[Any] | None = None


class ToolMessageIn(StrictBody):
    role: Literal["tool"]
    content: Content
    tool_call_id: str = Field(min_length=1)


ChatMessageIn = Annotated[
    SystemMessageIn | UserMessageIn | AssistantMessageIn | ToolMessageIn,
    Field(discriminator="role"),
]


class FunctionDef(StrictBody):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ChatTool(StrictBody):
    type: Literal["function"]
    function: FunctionDef


class NamedChoiceFunction(StrictBody):
    name: str


class NamedChoice(StrictBody):
    type: Literal["function"]
    function: NamedChoiceFunction


class ChatStreamOptions(StrictBody):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None


class ChatBody(StrictBody):
    model: str = Field(min_length=1)
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool | None = None
    stream_options: ChatStreamOptions | None = None
    tools: list[ChatTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedChoice | None = None
    parallel_tool_calls: bool | None = None
    metadata: dict[str, Any] | None = None
    user: str | None = None
    store: bool | None = None
    n: int | None = None
    # Generation controls belong to the graph: only "unset" is accepted.
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, Any] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    service_tier: str | None = None
    modalities: list[str] | None = None
    audio: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    verbosity: str | None = None
    web_search_options: dict[str, Any] | None = None
    functions: list[Any] | None = None
    function_call: Any = None


_UNSET_ONLY = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "top_logprobs",
    "seed",
    "stop",
    "reasoning_effort",
    "modalities",
    "audio",
    "prediction",
    "prompt_cache_key",
    "safety_identifier",
    "verbosity",
    "web_search_options",
    "functions",
    "function_call",
)
_TAGS = frozenset({"system", "developer", "user", "assistant", "tool", "TextPart", "OtherPart"})


@dataclass(frozen=True, slots=True)
class DecodedChatRequest:
    body: ChatBody
    messages: tuple[BaseMessage, ...]
    metadata: dict[str, str]
    tools: tuple[ClientFunctionTool, ...]
    tool_choice: ToolChoice
    # Answers to a paused run (tool messages answering lgos_interrupt calls): call id → content.
    answers: dict[str, str] | None
    # Where each answer is in the request (call id → `messages[3].content`), for errors.
    answer_params: dict[str, str] = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return bool(self.body.stream)

    @property
    def include_usage(self) -> bool:
        options = self.body.stream_options
        return bool(options and options.include_usage)


def decode(data: Mapping[str, Any]) -> DecodedChatRequest:
    body = validate(ChatBody, data, _TAGS)
    for name in _UNSET_ONLY:
        if getattr(body, name) is not None:
            raise unsupported(name, "The graph decides how its models are called.")
    if body.logprobs:
        raise unsupported("logprobs")
    if body.n not in (None, 1):
        raise unsupported("n", "Graphs return one choice.")
    if body.store:
        raise unsupported("store", "Chat completions are not stored.")
    if body.service_tier not in (None, "auto", "default"):
        raise unsupported("service_tier")
    if body.response_format is not None and body.response_format.get("type") != "text":
        raise unsupported("response_format", "Graphs answer in plain text.")
    if body.stream_options is not None and not body.stream:
        raise InvalidRequestError(
            "Invalid 'stream_options': only allowed when 'stream' is true.",
            param="stream_options",
            code="invalid_value",
        )
    tools = _tools(body)
    messages, answers = _messages(body)
    return DecodedChatRequest(
        body=body,
        messages=messages,
        metadata=check_metadata(body.metadata),
        tools=tools,
        tool_choice=_tool_choice(body, tools),
        answers=answers,
        answer_params={
            message.tool_call_id: f"messages[{index}].content"
            for index, message in enumerate(messages)
            if isinstance(message, ToolMessage) and message.tool_call_id in (answers or {})
        },
    )


def _tools(body: ChatBody) -> tuple[ClientFunctionTool, ...]:
    tools = [
        ClientFunctionTool(
            tool.function.name,
            tool.function.description,
            tool.function.parameters,
            tool.function.strict,
        )
        for tool in body.tools or ()
    ]
    return checked_tools(tools, lambda index: f"tools[{index}].function.name")


def _tool_choice(body: ChatBody, tools: tuple[ClientFunctionTool, ...]) -> ToolChoice:
    choice = body.tool_choice
    if isinstance(choice, NamedChoice):
        return resolve_tool_choice(
            None, choice.function.name, tools, name_param="tool_choice.function.name"
        )
    return resolve_tool_choice(choice, None, tools, name_param="tool_choice.function.name")


def _text(content: Content | None, param: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(content):
        if isinstance(part, TextPart):
            texts.append(part.text)
        else:
            raise unsupported_content(f"{param}[{index}]", part.type)
    return "".join(texts)


def _messages(body: ChatBody) -> tuple[tuple[BaseMessage, ...], dict[str, str] | None]:
    messages: list[BaseMessage] = []
    call_names: dict[str, str] = {}
    answered: set[str] = set()
    for index, message in enumerate(body.messages):
        param = f"messages[{index}]"
        if isinstance(message, SystemMessageIn):
            messages.append(SystemMessage(content=_text(message.content, f"{param}.content")))
        elif isinstance(message, UserMessageIn):
            messages.append(HumanMessage(content=_text(message.content, f"{param}.content")))
        elif isinstance(message, AssistantMessageIn):
            calls = []
            for position, call in enumerate(message.tool_calls or ()):
                call_names[call.id] = call.function.name
                calls.append(
                    tool_call(
                        call.id,
                        call.function.name,
                        call.function.arguments,
                        f"{param}.tool_calls[{position}].function.arguments",
                    )
                )
            text = _text(message.content, f"{param}.content")
            messages.append(AIMessage(content=text, tool_calls=calls))
        else:
            if message.tool_call_id not in call_names or message.tool_call_id in answered:
                raise InvalidRequestError(
                    f"Invalid '{param}.tool_call_id': it does not answer an earlier tool call, "
                    "or answers it twice.",
                    param=f"{param}.tool_call_id",
                    code="invalid_value",
                )
            answered.add(message.tool_call_id)
            messages.append(
                ToolMessage(
                    content=_text(message.content, f"{param}.content"),
                    tool_call_id=message.tool_call_id,
                )
            )
    return tuple(messages), _trailing_interrupt_answers(messages, call_names)


def _trailing_interrupt_answers(
    messages: list[BaseMessage], call_names: dict[str, str]
) -> dict[str, str] | None:
    """Tool messages at the end answering lgos_interrupt calls make this request a resume."""
    answers: dict[str, str] = {}
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        if call_names.get(message.tool_call_id) != INTERRUPT_FUNCTION:
            return None
        answers[message.tool_call_id] = str(message.content)
    return answers or None


def url_annotations(citations: tuple[Citation, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "url_citation",
            "url_citation": {
                "url": citation.url,
                "title": citation.title,
                "start_index": citation.start_index,
                "end_index": citation.end_index,
            },
        }
        for citation in citations
    ]


def usage_object(usage: Usage) -> dict[str, Any]:
    """The usage object with the detail objects OpenAI sends (zeros where a model reports none)."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def tool_calls(event: Finished | Interrupted) -> list[dict[str, Any]]:
    if isinstance(event, Interrupted):
        return [
            {
                "id": ids.interrupt_call_id(event.run_id, pending.id),
                "type": "function",
                "function": {"name": INTERRUPT_FUNCTION, "arguments": interrupt_arguments(pending)},
            }
            for pending in event.interrupts
        ]
    return [
        {
            "id": call.get("id") or ids.tool_call_id(),
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
        }
        for call in event.message.tool_calls
    ]


class ChatEncoder:
    """One completion's JSON object or chunk stream; all chunks share id, created and model."""

    __slots__ = ("_created", "_id", "_include_usage", "_model", "_prefix")

    def __init__(self, model: str, *, include_usage: bool = False) -> None:
        self._id = ids.chat_completion_id()
        self._created = int(time.time())
        self._model = model
        self._include_usage = include_usage
        # Everything before the choices, serialized once per stream rather than per chunk.
        self._prefix = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": ids.system_fingerprint(),
            "service_tier": "default",
        }

    def completion(self, event: Finished | Interrupted) -> dict[str, Any]:
        calls = tool_calls(event)
        text = event.text
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text if text or not calls else None,
            "refusal": None,
            "annotations": (
                url_annotations(event.citations) if isinstance(event, Finished) else []
            ),
        }
        if calls:
            message["tool_calls"] = calls
        return {
            "id": self._id,
            "object": "chat.completion",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": ids.system_fingerprint(),
            "service_tier": "default",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": usage_object(event.usage),
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        chunk = {
            **self._prefix,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if self._include_usage:
            chunk["usage"] = None
        return data_event(chunk)

    def start(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def text_delta(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def end(self, event: Finished | Interrupted) -> list[bytes]:
        frames = []
        calls = tool_calls(event)
        if calls:
            frames.append(
                self._chunk({"tool_calls": [{"index": i, **call} for i, call in enumerate(calls)]})
            )
        frames.append(self._chunk({}, "tool_calls" if calls else "stop"))
        if self._include_usage:
            frames.append(
                data_event({**self._prefix, "choices": [], "usage": usage_object(event.usage)})
            )
        return frames

    @staticmethod
    def error(message: str = SERVER_ERROR_MESSAGE) -> bytes:
        return data_event(
            {
                "error": {
                    "message": message,
                    "type": "server_error",
                    "param": None,
                    "code": "server_error",
                }
            }
        )
