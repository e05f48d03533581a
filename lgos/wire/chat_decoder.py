"""Chat Completions requests: the body's schema and its decoding into messages and answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Discriminator, Field, JsonValue, Tag

from lgos.core.capabilities import Demand
from lgos.core.json_schema import JsonSchema
from lgos.core.records import per_request
from lgos.core.request import ClientFunctionTool, ToolChoice
from lgos.wire import decoding, media, structured, tool_choice
from lgos.wire.decoding import StrictBody
from lgos.wire.interrupts import INTERRUPT_FUNCTION


class TextPart(StrictBody):
    type: Literal["text"]
    text: str


class OtherPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


def _part_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "image_url", "file") else "other"


Part = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[media.ChatImagePart, Tag("image_url")]
    | Annotated[media.ChatFilePart, Tag("file")]
    | Annotated[OtherPart, Tag("other")],
    Discriminator(_part_tag),
]
Content = str | list[Part]


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
    parameters: JsonSchema | None = None
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


class ChatBody(decoding.ApiBody):
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream_options: ChatStreamOptions | None = None
    tools: list[ChatTool] | None = None
    # Another choice object: client JSON that `_tool_choice` checks. Any, not JsonValue: with
    # JsonValue the union would take a named function's object as this member instead.
    tool_choice: Literal["none", "auto", "required"] | NamedChoice | dict[str, Any] | None = None
    n: int | None = None
    # Generation controls belong to the graph: only "unset" is accepted.
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    logit_bias: dict[str, JsonValue] | None = None
    logprobs: bool | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    response_format: dict[str, JsonValue] | None = None  # `structured.chat_format` checks it
    reasoning_effort: str | None = None
    # Not in OpenAI's Chat API, but sent by clients written for providers that take it
    # (OpenRouter, llm-comply's reasoning test): the Responses object, effort and summary.
    reasoning: dict[str, JsonValue] | None = None
    modalities: list[str] | None = None
    audio: dict[str, JsonValue] | None = None
    prediction: dict[str, JsonValue] | None = None
    verbosity: str | None = None
    web_search_options: dict[str, JsonValue] | None = None
    functions: list[Any] | None = None
    function_call: Any = None


_UNSET_ONLY = (
    *decoding.GENERATION_CONTROLS,
    "max_tokens",
    "max_completion_tokens",
    "logit_bias",
    "seed",
    "stop",
    "modalities",
    "audio",
    "prediction",
    "verbosity",
    "web_search_options",
    "functions",
    "function_call",
)
_TAGS = frozenset(
    {"system", "developer", "user", "assistant", "tool", "text", "image_url", "file", "other"}
)


@per_request
class DecodedChatRequest(decoding.DecodedRequest[ChatBody]):
    """Answers are the contents of trailing tool messages that answer lgos_interrupt calls."""

    # Where each answer is in the request (call id → `messages[3].content`), for errors.
    answer_params: dict[str, str] = field(default_factory=dict)

    @property
    def include_usage(self) -> bool:
        options = self.body.stream_options
        return bool(options and options.include_usage)


def decode(data: Mapping[str, Any]) -> DecodedChatRequest:
    body = decoding.validate(ChatBody, data, _TAGS)
    decoding.reject_set(body, _UNSET_ONLY)
    if body.logprobs:
        raise decoding.unsupported("logprobs")
    if body.n not in (None, 1):
        raise decoding.unsupported("n", "Graphs return one choice.")
    if body.store:
        raise decoding.unsupported("store", "Chat completions are not stored.")
    decoding.check_common(body, body.stream_options)
    tools = _tools(body)
    messages, answers = _messages(body)
    response_format = structured.chat_format(body.response_format)
    reasoning, reasoning_demands = structured.reasoning_options(
        body.reasoning, body.reasoning_effort
    )
    return DecodedChatRequest(
        body=body,
        messages=messages,
        metadata=decoding.check_metadata(body.metadata),
        tools=tools,
        tool_choice=_tool_choice(body, tools),
        answers=answers,
        response_format=response_format,
        reasoning=reasoning,
        demands=(
            *structured.format_demand(response_format, "response_format"),
            *reasoning_demands,
            *_media_demands(body),
        ),
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
    return decoding.checked_tools(tools, lambda index: f"tools[{index}].function.name")


def _tool_choice(body: ChatBody, tools: tuple[ClientFunctionTool, ...]) -> ToolChoice:
    choice = body.tool_choice
    if isinstance(choice, NamedChoice):
        return decoding.resolve_tool_choice(
            None, choice.function.name, tools, name_param="tool_choice.function.name"
        )
    if isinstance(choice, dict):
        if choice.get("type") != "allowed_tools":
            raise decoding.unsupported(
                "tool_choice", "Use 'none', 'auto', 'required', a function or 'allowed_tools'."
            )
        spec = tool_choice.validated(tool_choice.ChatAllowedTools, choice, "tool_choice")
        return tool_choice.allowed_tools(
            spec.allowed_tools, tools, (), param="tool_choice.allowed_tools"
        )
    return decoding.resolve_tool_choice(choice, None, tools, name_param="tool_choice.function.name")


def _text(content: Content | None, param: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return decoding.joined_text(
        content, param, lambda part: part.text if isinstance(part, TextPart) else None
    )


def _user_content(content: Content, param: str) -> str | list[Any]:
    """Plain text, or standard content blocks when the message carries images or files."""
    if isinstance(content, str) or not any(media.is_media(part) for part in content):
        return _text(content, f"{param}.content")
    blocks: list[Any] = []
    for index, part in enumerate(content):
        where = f"{param}.content[{index}]"
        if media.is_media(part):
            blocks.append(media.block(part, where))
        elif isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        else:
            raise decoding.unsupported_content(where, part.type)
    return blocks


def _media_demands(body: ChatBody) -> tuple[Demand, ...]:
    demands = tuple(
        media.demand(part, f"messages[{index}].content[{position}]")
        for index, message in enumerate(body.messages)
        if isinstance(message, UserMessageIn) and not isinstance(message.content, str)
        for position, part in enumerate(message.content)
        if media.is_media(part)
    )
    media.check_count(demands)
    return demands


def _messages(body: ChatBody) -> tuple[tuple[BaseMessage, ...], dict[str, str] | None]:
    messages: list[BaseMessage] = []
    call_names: dict[str, str] = {}
    answered: set[str] = set()
    for index, message in enumerate(body.messages):
        param = f"messages[{index}]"
        if isinstance(message, SystemMessageIn):
            messages.append(SystemMessage(content=_text(message.content, f"{param}.content")))
        elif isinstance(message, UserMessageIn):
            messages.append(HumanMessage(content=_user_content(message.content, param)))
        elif isinstance(message, AssistantMessageIn):
            calls = []
            for position, call in enumerate(message.tool_calls or ()):
                call_names[call.id] = call.function.name
                calls.append(
                    decoding.tool_call(
                        call.id,
                        call.function.name,
                        call.function.arguments,
                        f"{param}.tool_calls[{position}].function.arguments",
                    )
                )
            text = _text(message.content, f"{param}.content")
            messages.append(AIMessage(content=text, tool_calls=calls))
        else:
            messages.append(
                decoding.tool_output(
                    message.tool_call_id,
                    _text(message.content, f"{param}.content"),
                    calls=call_names,
                    answered=answered,
                    param=f"{param}.tool_call_id",
                    problem="it does not answer an earlier tool call, or answers it twice.",
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
