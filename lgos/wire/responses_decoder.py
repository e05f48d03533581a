"""Decoding `POST /v1/responses` bodies into a `GraphRequest` (plus what the Response echoes).

The supported subset is explicit: a field we cannot honour is rejected with a 400 naming it,
unless it carries the value we would act on anyway (for example `temperature: null` or
`truncation: "disabled"`), which SDKs and UIs routinely send.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.content import ReasoningContentBlock
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    TypeAdapter,
    field_validator,
)

from lgos.core.capabilities import Demand, HostedToolDemand
from lgos.core.errors import InvalidRequestError
from lgos.core.json_schema import JsonSchema
from lgos.core.records import per_request
from lgos.core.request import (
    AllowedTools,
    ClientFunctionTool,
    HostedToolChoice,
    NamedToolChoice,
    ToolChoice,
)
from lgos.wire import decoding, media, structured, tool_choice
from lgos.wire.decoding import (
    GENERATION_CONTROLS,
    ApiBody,
    DecodedRequest,
    StrictBody,
    assistant_with_calls,
    check_common,
    check_metadata,
    checked_tools,
    joined_text,
    reject_set,
    resolve_tool_choice,
    tool_call,
    tool_output,
    unsupported,
    validate,
)
from lgos.wire.interrupts import INTERRUPT_FUNCTION


class InputText(StrictBody):
    type: Literal["input_text"]
    text: str


class OutputText(StrictBody):
    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, JsonValue]] | None = None
    logprobs: list[Any] | None = None
    parsed: None = None


class Refusal(StrictBody):
    type: Literal["refusal"]
    refusal: str


class UnsupportedPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


def _part_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    known = {"input_text", "output_text", "refusal", "input_image", "input_file"}
    return kind if kind in known else "unsupported"


ContentPart = Annotated[
    Annotated[InputText, Tag("input_text")]
    | Annotated[media.InputImage, Tag("input_image")]
    | Annotated[media.InputFile, Tag("input_file")]
    | Annotated[OutputText, Tag("output_text")]
    | Annotated[Refusal, Tag("refusal")]
    | Annotated[UnsupportedPart, Tag("unsupported")],
    Discriminator(_part_tag),
]


class MessageItem(StrictBody):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]
    id: str | None = None
    status: str | None = None
    phase: Literal["commentary", "final_answer"] | None = None


class FunctionCallItem(StrictBody):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str
    id: str | None = None
    status: str | None = None
    namespace: None = None
    caller: None = None
    # LiteLLM re-serialises function_call output items with `"async": null`; the strict SDK
    # then holds it as `async_`, and the Agents SDK replays it under that field name.
    async_: None = Field(default=None, validation_alias=AliasChoices("async", "async_"))


class FunctionCallOutputItem(StrictBody):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[InputText]
    id: str | None = None
    status: str | None = None


class SummaryText(StrictBody):
    type: Literal["summary_text"]
    text: str


class ReasoningText(StrictBody):
    type: Literal["reasoning_text"]
    text: str


class ReasoningItem(StrictBody):
    """Reasoning the client sends back from an earlier turn (the Agents SDK replays every
    item it was given). The graph receives it on the AI message it preceded."""

    type: Literal["reasoning"]
    id: str | None = None
    summary: list[SummaryText] = Field(default_factory=list)
    content: list[ReasoningText] | None = None
    encrypted_content: str | None = None
    status: str | None = None

    def blocks(self) -> list[ReasoningContentBlock]:
        """LangChain reasoning blocks, one per summary part, shaped as `ChatOpenAI` reads them
        back into a Responses reasoning item (so a graph that forwards the message to OpenAI
        replays the item whole)."""
        common: ReasoningContentBlock = {"type": "reasoning"}
        if self.id is not None:
            common["id"] = self.id
        extras: dict[str, object] = {}
        if self.encrypted_content is not None:
            extras["encrypted_content"] = self.encrypted_content
        if self.content is not None:
            extras["content"] = [part.model_dump() for part in self.content]
        if extras:
            common["extras"] = extras
        if not self.summary:
            return [common]
        return [{**common, "reasoning": part.text} for part in self.summary]


class UnsupportedItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


_ITEM_TAGS = {"message", "function_call", "function_call_output", "reasoning"}


def _item_tag(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("type", "message")
    else:
        kind = getattr(value, "type", "message")
    return kind if kind in _ITEM_TAGS else "unsupported"


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[UnsupportedItem, Tag("unsupported")],
    Discriminator(_item_tag),
]


class FunctionTool(StrictBody):
    type: Literal["function"]
    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str | None = None
    parameters: JsonSchema | None = None
    strict: bool | None = None


class UnsupportedTool(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


def _tool_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return "function" if kind == "function" else "unsupported"


Tool = Annotated[
    Annotated[FunctionTool, Tag("function")] | Annotated[UnsupportedTool, Tag("unsupported")],
    Discriminator(_tool_tag),
]


class NamedFunction(StrictBody):
    type: Literal["function"]
    name: str


class TextConfig(StrictBody):
    # Checked by `structured.responses_format`, which names the exact field at fault.
    format: dict[str, JsonValue] | None = None
    verbosity: str | None = None


class ConversationRef(StrictBody):
    id: str = Field(min_length=1)


class StreamOptions(StrictBody):
    include_obfuscation: bool | None = None


class ResponsesBody(ApiBody):
    input: str | list[InputItem]
    instructions: str | None = None
    stream_options: StreamOptions | None = None
    background: bool | None = None
    previous_response_id: str | None = None
    tools: list[Tool] | None = None
    # Another choice object: client JSON that `_tool_choice` checks (Any: see ChatBody's).
    tool_choice: Literal["none", "auto", "required"] | NamedFunction | dict[str, Any] | None = None
    text: TextConfig | None = None
    truncation: Literal["disabled", "auto"] | None = None
    include: list[str] | None = None
    extra_headers: dict[str, str] | None = None
    # Generation controls: graphs own their model calls, so only "unset" is accepted.
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    reasoning: dict[str, JsonValue] | None = None  # `structured.reasoning_options` checks it
    conversation: str | ConversationRef | None = None
    prompt: Any = None
    prompt_cache_retention: str | None = None

    @field_validator("input")
    @classmethod
    def _not_empty(cls, value: str | list[Any]) -> str | list[Any]:
        if (isinstance(value, str) and not value.strip()) or (
            isinstance(value, list) and not value
        ):
            raise ValueError("input must not be empty")
        return value


_TAGS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "unsupported",
        "function",
        "input_text",
        "output_text",
        "refusal",
        "input_image",
        "input_file",
    }
)
_UNSET_ONLY = (
    *GENERATION_CONTROLS,
    "max_output_tokens",
    "max_tool_calls",
    "prompt",
    "prompt_cache_retention",
)
# `include[]` values LGOS honours. Reasoning is never encrypted here, so asking for its
# encrypted content (which the Agents SDK does with store=false) is granted as it stands: the
# reasoning items are whole already. The others name data no graph produces (logprobs,
# hosted-tool results).
INCLUDABLE = frozenset({"reasoning.encrypted_content"})


_HISTORY = TypeAdapter(list[InputItem])


@per_request
class DecodedResponsesRequest(DecodedRequest[ResponsesBody]):
    body_idempotency_key: str | None = None
    # Where each answer is in the request (call id → `input[2].output`), for errors.
    answer_params: dict[str, str] = field(default_factory=dict)

    @property
    def background(self) -> bool:
        return bool(self.body.background)

    @property
    def truncation(self) -> Literal["disabled", "auto"]:
        return self.body.truncation or "disabled"

    @property
    def conversation_id(self) -> str | None:
        conversation = self.body.conversation
        if isinstance(conversation, ConversationRef):
            return conversation.id
        return conversation

    def with_history(
        self, history: Sequence[Mapping[str, Any]], *, replay_from: int = 0
    ) -> DecodedResponsesRequest:
        """This request continuing a stored conversation: `history` (earlier input and
        output items) comes before the input. The graph receives the history from index
        `replay_from` on as messages (a graph keeping its own thread has seen the rest), then
        the input, which may answer calls the history made. Trailing interrupt answers stay
        a resume."""
        items = _HISTORY.validate_python(list(history))
        messages, answers = _conversation(self.body, items, replay_from=replay_from)
        decoded = dataclasses.replace(
            self,
            messages=messages,
            answers=answers,
            answer_params=_answer_params(self.body, answers),
        )
        _check_resume(decoded)
        return decoded

    def echo_tools(self) -> list[dict[str, JsonValue]]:
        functions: list[dict[str, JsonValue]] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters) if tool.parameters is not None else None,
                "strict": tool.strict,
            }
            for tool in self.tools
        ]
        # In the order the client sent them.
        hosted = iter(self.hosted_tools)
        return [
            next(hosted) if isinstance(tool, UnsupportedTool) else functions.pop(0)
            for tool in self.body.tools or ()
        ]

    def echo_tool_choice(self) -> Any:
        choice = self.tool_choice
        if isinstance(choice, NamedToolChoice):
            return {"type": "function", "name": choice.name}
        if isinstance(choice, AllowedTools | HostedToolChoice):
            return self.body.tool_choice  # as the client sent it
        return choice


# The fields of a plain request: a text input, and settings that no option or check of the
# decoder reads besides `metadata`'s limits and the `instructions` `_conversation` reads.
_PLAIN_FIELDS = frozenset(
    {
        "model",
        "input",
        "stream",
        "store",
        "metadata",
        "user",
        "instructions",
        "previous_response_id",
    }
)


def decode(data: Mapping[str, Any]) -> DecodedResponsesRequest:
    body = validate(ResponsesBody, data, _TAGS)
    if isinstance(body.input, str) and body.model_fields_set <= _PLAIN_FIELDS:
        # Nearly every request. Every option and check of `_decoded` has its neutral value for
        # it (no tools, format, reasoning, media or answers; nothing to refuse): skipping them
        # saves about 15 µs of a one-at-a-time request in a server, where each of them runs
        # cold (docs/benchmarks.md, 2026-12-07, third round). tests/wire checks that both
        # paths decode every plain body alike.
        messages, _ = _conversation(body, [])
        return DecodedResponsesRequest(
            body=body,
            messages=messages,
            metadata=check_metadata(body.metadata),
            tools=(),
            tool_choice="auto",
            answers=None,
        )
    return _decoded(body, data)


def _decoded(body: ResponsesBody, data: Mapping[str, Any]) -> DecodedResponsesRequest:
    """`decode` of any validated body."""
    _reject_unsupported(body, data)
    metadata = check_metadata(body.metadata)
    tools = _tools(body)
    if body.conversation is not None and body.previous_response_id is not None:
        raise InvalidRequestError(
            "Mutually exclusive parameters: Ensure you are only providing one of: "
            "'previous_response_id' or 'conversation'.",
            param="conversation",
            code="mutually_exclusive_parameters",
        )
    messages, answers = _conversation(body, [])
    response_format = structured.responses_format(body.text.format if body.text else None)
    reasoning, reasoning_demands = structured.reasoning_options(body.reasoning)
    decoded = DecodedResponsesRequest(
        body=body,
        messages=messages,
        metadata=metadata,
        tools=tools,
        tool_choice=_tool_choice(body, tools),
        answers=answers,
        response_format=response_format,
        reasoning=reasoning,
        demands=(
            *structured.format_demand(response_format, "text.format"),
            *reasoning_demands,
            *_tool_demands(body),
            *_media_demands(body),
        ),
        hosted_tools=_hosted_tools(body),
        body_idempotency_key=_body_idempotency_key(body),
        answer_params=_answer_params(body, answers),
    )
    _check_resume(decoded)
    return decoded


def _check_resume(decoded: DecodedResponsesRequest) -> None:
    body = decoded.body
    if decoded.answers is None:
        return
    if body.previous_response_id is None and body.conversation is None:
        raise InvalidRequestError(
            "This input answers a paused run (it ends with lgos_interrupt calls or outputs); "
            "send it with 'previous_response_id' set to the paused Response's id.",
            param="previous_response_id",
            code="missing_required_parameter",
        )
    if body.instructions is not None:
        raise unsupported("instructions", "A paused run resumes with its original instructions.")


def _answer_params(body: ResponsesBody, answers: dict[str, str] | None) -> dict[str, str]:
    if not answers or isinstance(body.input, str):
        return {}
    # Later items win: the answers are the trailing outputs, earlier ones are history.
    return {
        item.call_id: f"input[{index}].output"
        for index, item in enumerate(body.input)
        if isinstance(item, FunctionCallOutputItem) and item.call_id in answers
    }


def _reject_unsupported(body: ResponsesBody, data: Mapping[str, Any]) -> None:
    reject_set(body, _UNSET_ONLY)
    check_common(body, body.stream_options)
    if body.text is not None and body.text.verbosity is not None:
        raise unsupported("text.verbosity")
    for index, value in enumerate(body.include or ()):
        if value not in INCLUDABLE:
            raise InvalidRequestError(
                f"Invalid 'include[{index}]': '{value}' cannot be included by this server; "
                f"it includes: {', '.join(sorted(INCLUDABLE))}.",
                param=f"include[{index}]",
                code="unsupported_value",
            )
    if body.background and body.store is False:
        raise InvalidRequestError(
            "Background responses are stored: 'store' must be true or omitted.",
            param="store",
            code="invalid_value",
        )


def _tools(body: ResponsesBody) -> tuple[ClientFunctionTool, ...]:
    tools = [
        ClientFunctionTool(tool.name, tool.description, tool.parameters, tool.strict)
        for tool in body.tools or ()
        if isinstance(tool, FunctionTool)
    ]
    return checked_tools(tools, lambda index: f"tools[{_function_index(body, index)}].name")


def _function_index(body: ResponsesBody, position: int) -> int:
    """Where the `position`-th function tool sits in `tools` (hosted ones interleave)."""
    indexes = [i for i, tool in enumerate(body.tools or ()) if isinstance(tool, FunctionTool)]
    return indexes[position]


def _hosted_tools(body: ResponsesBody) -> tuple[dict[str, Any], ...]:  # client JSON, as sent
    return tuple(
        tool.model_dump() for tool in body.tools or () if isinstance(tool, UnsupportedTool)
    )


def _tool_demands(body: ResponsesBody) -> tuple[HostedToolDemand, ...]:
    return tuple(
        HostedToolDemand(tool.type, f"tools[{index}].type")
        for index, tool in enumerate(body.tools or ())
        if isinstance(tool, UnsupportedTool)
    )


def _tool_choice(body: ResponsesBody, tools: tuple[ClientFunctionTool, ...]) -> ToolChoice:
    choice = body.tool_choice
    if isinstance(choice, NamedFunction):
        return resolve_tool_choice(None, choice.name, tools, name_param="tool_choice.name")
    if isinstance(choice, dict):
        hosted_types = [tool["type"] for tool in _hosted_tools(body)]
        if choice.get("type") == "allowed_tools":
            spec = tool_choice.validated(tool_choice.ResponsesAllowedTools, choice, "tool_choice")
            return tool_choice.allowed_tools(spec, tools, hosted_types, param="tool_choice")
        kind = choice.get("type")
        if not isinstance(kind, str) or kind == "function":
            raise InvalidRequestError(
                "Invalid 'tool_choice': expected 'none', 'auto', 'required', a function, "
                "'allowed_tools' or a hosted tool type.",
                param="tool_choice",
                code="invalid_value",
            )
        return tool_choice.hosted_choice(kind, hosted_types, param="tool_choice")
    return resolve_tool_choice(choice, None, tools, name_param="tool_choice.name")


def _body_idempotency_key(body: ResponsesBody) -> str | None:
    """LiteLLM forwards `extra_body={"extra_headers": {...}}` as this body field."""
    if not body.extra_headers:
        return None
    found = None
    for name, value in body.extra_headers.items():
        if name.lower() not in decoding.IDEMPOTENCY_HEADERS:
            raise InvalidRequestError(
                f"Invalid 'extra_headers.{name}': only Idempotency-Key may be sent this way.",
                param=f"extra_headers.{name}",
                code="invalid_value",
            )
        found = value
    return found


def _text_of(content: str | list[Any], param: str, *, allow_media: bool = False) -> str:
    if isinstance(content, str):
        return content
    if allow_media:  # the blocks carry them (`_user_content`); here only the text counts
        return joined_text(content, param, lambda p: "" if media.is_media(p) else _part_text(p))
    return joined_text(content, param, _part_text)


def _user_content(content: str | list[Any], text: str, param: str) -> str | list[Any]:
    """Plain text, or standard content blocks when the message carries images or files."""
    if isinstance(content, str) or not any(media.is_media(part) for part in content):
        return text
    return [
        media.block(part, f"{param}.content[{index}]")
        if media.is_media(part)
        else {"type": "text", "text": _part_text(part)}
        for index, part in enumerate(content)
    ]


def _media_demands(body: ResponsesBody) -> tuple[Demand, ...]:
    if isinstance(body.input, str):
        return ()
    demands = tuple(
        media.demand(part, f"input[{index}].content[{position}]")
        for index, item in enumerate(body.input)
        if isinstance(item, MessageItem) and not isinstance(item.content, str)
        for position, part in enumerate(item.content)
        if media.is_media(part)
    )
    media.check_count(demands)
    return demands


def _part_text(part: Any) -> str | None:
    if isinstance(part, InputText | OutputText):
        return part.text
    return part.refusal if isinstance(part, Refusal) else None


def _conversation(
    body: ResponsesBody, history: list[Any], *, replay_from: int = 0
) -> tuple[tuple[BaseMessage, ...], dict[str, str] | None]:
    """Messages for the graph, and the trailing interrupt answers if this is a resume.

    A resume is an input that ends with lgos_interrupt calls or with outputs answering calls
    that neither the input nor the history contains (they live in the paused run). Earlier
    answered interrupts are ordinary history. A resume's messages are its input only: the
    paused run has the rest.
    """
    messages: list[BaseMessage] = []
    if body.instructions:
        messages.append(SystemMessage(content=body.instructions))
    if isinstance(body.input, str):
        if not history:  # the common request: one user text, no item model to build
            messages.append(HumanMessage(content=body.input))
            return tuple(messages), None
        items: list[Any] = [*history, MessageItem(role="user", content=body.input)]
    else:
        items = [*history, *body.input]
    call_names = {item.call_id: item.name for item in items if isinstance(item, FunctionCallItem)}
    tail_start = max(_resume_tail_start(items, call_names), len(history))
    offset = len(history)  # error params count from the request's own input
    if tail_start < len(items):
        # A resume: the graph sees only this request's input before the answers.
        items = items[offset:]
        tail_start -= offset
        offset = 0
    answers = _resume_answers(items, tail_start)
    messages.extend(
        _item_messages(items[:tail_start], offset=offset, first_message=min(replay_from, offset))
    )
    if answers is None and all(isinstance(message, SystemMessage) for message in messages):
        raise InvalidRequestError(
            "The input has no message for the graph.", param="input", code="invalid_value"
        )
    return tuple(messages), answers


def _resume_answers(items: list[Any], tail_start: int) -> dict[str, str] | None:
    """The answers (call id to text) in the resume tail `items[tail_start:]`; None without one."""
    if tail_start >= len(items):
        return None
    answers: dict[str, str] = {}
    for index in range(tail_start, len(items)):
        item = items[index]
        if isinstance(item, FunctionCallOutputItem):
            if item.call_id in answers:
                raise InvalidRequestError(
                    f"Invalid 'input[{index}].call_id': answered twice.",
                    param=f"input[{index}].call_id",
                    code="invalid_value",
                )
            answers[item.call_id] = _output_text(item)
    if not answers:
        raise InvalidRequestError(
            "The input ends with lgos_interrupt calls but no answers: add one "
            "function_call_output per call.",
            param="input",
            code="invalid_value",
        )
    return answers


def _item_messages(items: list[Any], *, offset: int, first_message: int) -> list[BaseMessage]:
    """LangChain messages for input items, every function_call answered by an output after it.

    Items before `first_message` are only checked (the graph's checkpoint has them already);
    error params count from `offset`, where the request's own input starts.
    """
    messages: list[BaseMessage] = []
    pending_calls: list[Any] = []
    # Reasoning blocks waiting for the AI message their items preceded.
    reasoning: list[ReasoningContentBlock] = []
    calls_by_id: dict[str, str] = {}
    answered: set[str] = set()
    for index, item in enumerate(items):
        param = f"input[{index - offset}]"
        if isinstance(item, ReasoningItem):
            if pending_calls:  # reasoning starts the next turn
                messages.append(assistant_with_calls(reasoning, pending_calls))
                pending_calls, reasoning = [], []
            if index >= first_message:
                reasoning.extend(item.blocks())
            continue
        if isinstance(item, FunctionCallItem):
            if item.call_id in calls_by_id:
                raise InvalidRequestError(
                    f"Invalid '{param}.call_id': duplicate call id.",
                    param=f"{param}.call_id",
                    code="invalid_value",
                )
            calls_by_id[item.call_id] = item.name
            if index >= first_message:
                pending_calls.append(
                    tool_call(item.call_id, item.name, item.arguments, f"{param}.arguments")
                )
            continue
        if pending_calls:
            messages.append(assistant_with_calls(reasoning, pending_calls))
            pending_calls, reasoning = [], []
        if index < first_message:
            if isinstance(item, FunctionCallOutputItem):
                answered.add(item.call_id)
            continue
        if isinstance(item, MessageItem) and item.role == "assistant":
            text = _text_of(item.content, f"{param}.content")
            messages.append(AIMessage(content=_with_reasoning(reasoning, text)))
            reasoning = []
            continue
        if reasoning:  # reasoning that led to no answer of its own
            messages.append(AIMessage(content=_with_reasoning(reasoning, "")))
            reasoning = []
        message = _item_message(item, param, calls_by_id, answered)
        if message is not None:
            messages.append(message)
    if pending_calls or reasoning:
        messages.append(assistant_with_calls(reasoning, pending_calls))
    unanswered = sorted(set(calls_by_id) - answered)
    if unanswered:
        raise InvalidRequestError(
            f"No tool output found for function call {unanswered[0]}: every function_call in "
            "the input needs a function_call_output after it.",
            param="input",
            code="invalid_value",
        )
    return messages


def _item_message(
    item: Any, param: str, calls_by_id: dict[str, str], answered: set[str]
) -> BaseMessage | None:
    """The message for one input item that is not a function_call (None: nothing to say)."""
    if isinstance(item, MessageItem):
        text = _text_of(item.content, f"{param}.content", allow_media=item.role == "user")
        if item.role == "user":
            return HumanMessage(content=_user_content(item.content, text, param))
        return SystemMessage(content=text)
    if isinstance(item, FunctionCallOutputItem):
        return tool_output(
            item.call_id,
            _output_text(item),
            calls=calls_by_id,
            answered=answered,
            param=f"{param}.call_id",
            problem="no earlier function_call with this call id, or it was answered already.",
        )
    raise InvalidRequestError(
        f"Invalid '{param}.type': '{item.type}' items are not supported.",
        param=f"{param}.type",
        code="unsupported_value",
    )


def _with_reasoning(reasoning: list[ReasoningContentBlock], text: str) -> str | list[Any]:
    """An AI message's content: its text, after the reasoning that led to it."""
    if not reasoning:
        return text
    return [*reasoning, {"type": "text", "text": text}] if text else reasoning


def _output_text(item: FunctionCallOutputItem) -> str:
    if isinstance(item.output, str):
        return item.output
    return "".join(part.text for part in item.output)


def _resume_tail_start(items: list[Any], call_names: Mapping[str, str]) -> int:
    """Index where the trailing interrupt calls/answers begin (len(items) when none)."""
    start = len(items)
    while start > 0:
        item = items[start - 1]
        if (isinstance(item, FunctionCallItem) and item.name == INTERRUPT_FUNCTION) or (
            isinstance(item, FunctionCallOutputItem)
            and call_names.get(item.call_id, INTERRUPT_FUNCTION) == INTERRUPT_FUNCTION
        ):
            start -= 1
        else:
            break
    return start


def idempotency_key(headers: Mapping[str, str], decoded: DecodedResponsesRequest) -> str | None:
    """The client's Idempotency-Key: a header, or LiteLLM's body `extra_headers`."""
    return decoding.idempotency_key(headers, decoded.body_idempotency_key)


@dataclass(frozen=True, slots=True)
class RetrieveQuery:
    """`GET /v1/responses/{id}`'s query: poll, or stream the events after `starting_after`."""

    stream: bool
    starting_after: int | None


def decode_retrieve_query(params: Mapping[str, str]) -> RetrieveQuery:
    # include_obfuscation: accepted and ignored (no obfuscation padding is sent).
    stream = _boolean(params, "stream")
    after = _starting_after(params)
    if after is not None and not stream:
        raise InvalidRequestError(
            "'starting_after' is only allowed with 'stream=true'.",
            param="starting_after",
            code="invalid_value",
        )
    return RetrieveQuery(stream, after)


def _boolean(params: Mapping[str, str], name: str) -> bool:
    value = params.get(name)
    if value is None or value.lower() == "false":
        return False
    if value.lower() == "true":
        return True
    raise InvalidRequestError(
        f"Invalid '{name}': expected true or false.", param=name, code="invalid_value"
    )


def _starting_after(params: Mapping[str, str]) -> int | None:
    value = params.get("starting_after")
    if value is None:
        return None
    try:
        after = int(value)
    except ValueError:
        after = -1
    if after < 0:
        raise InvalidRequestError(
            "Invalid 'starting_after': expected a sequence number (an integer, 0 or more).",
            param="starting_after",
            code="invalid_value",
        )
    return after
