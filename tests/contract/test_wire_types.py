"""The wire's TypedDicts name what the official SDK validates: every field the SDK requires is
a required key, every key is a field the SDK knows (or a stated LGOS extension), a key the SDK
does not let be null is never null, and each `type` literal is one the SDK accepts.

The contract tests check the bytes LGOS sends against the SDK in strict mode; this checks the
types the encoders are held to, so a shape that drifts from the SDK fails here, by name."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints

import openai.types as sdk
import openai.types.chat as chat_sdk
import openai.types.conversations as conversations_sdk
import openai.types.responses as responses_sdk
import pytest
from openai.types import completion_usage
from openai.types.chat import chat_completion, chat_completion_chunk, chat_completion_message
from openai.types.chat import chat_completion_message_function_tool_call as function_tool_call
from openai.types.responses import response_output_text, response_reasoning_item, response_usage
from pydantic import BaseModel

from lgos.wire.error_envelope import ErrorObject
from lgos.wire.types import chat, events, items, models, responses

pytestmark = pytest.mark.timeout(30)

# Keys LGOS sends beyond the SDK's fields, each on purpose.
EXTENSIONS: dict[type, frozenset[str]] = {
    # The Open Responses field set, which the SDK's Response does not define all of.
    responses.ResponseObject: frozenset({"store", "presence_penalty", "frequency_penalty"}),
    # Open Responses' event names the function, which the SDK's event leaves out.
    events.FunctionCallArgumentsDoneEvent: frozenset({"name"}),
    # The nested form of the error some clients read (see the protocol notes).
    events.ErrorEvent: frozenset({"error"}),
    # What clients read to adapt their UI to a graph (`/v1/models`).
    models.ModelObject: frozenset({"name", "description", "lgos"}),
}

PAIRS: list[tuple[type, type[BaseModel]]] = [
    (responses.ResponseObject, responses_sdk.Response),
    (responses.MessageItem, responses_sdk.ResponseOutputMessage),
    (responses.FunctionCallItem, responses_sdk.ResponseFunctionToolCall),
    (responses.ReasoningItem, responses_sdk.ResponseReasoningItem),
    (responses.SummaryText, response_reasoning_item.Summary),
    (responses.OutputText, responses_sdk.ResponseOutputText),
    (responses.UrlCitation, response_output_text.AnnotationURLCitation),
    (responses.ResponseUsage, responses_sdk.ResponseUsage),
    (responses.InputTokensDetails, response_usage.InputTokensDetails),
    (responses.OutputTokensDetails, response_usage.OutputTokensDetails),
    (responses.ResponseError, responses_sdk.ResponseError),
    (responses.JsonSchemaFormat, responses_sdk.ResponseFormatTextJSONSchemaConfig),
    (events.ResponseLifecycleEvent, responses_sdk.ResponseCreatedEvent),
    (events.ResponseLifecycleEvent, responses_sdk.ResponseQueuedEvent),
    (events.ResponseLifecycleEvent, responses_sdk.ResponseInProgressEvent),
    (events.ResponseLifecycleEvent, responses_sdk.ResponseCompletedEvent),
    (events.ResponseLifecycleEvent, responses_sdk.ResponseFailedEvent),
    (events.ResponseLifecycleEvent, responses_sdk.ResponseIncompleteEvent),
    (events.OutputItemEvent, responses_sdk.ResponseOutputItemAddedEvent),
    (events.OutputItemEvent, responses_sdk.ResponseOutputItemDoneEvent),
    (events.ContentPartEvent, responses_sdk.ResponseContentPartAddedEvent),
    (events.ContentPartEvent, responses_sdk.ResponseContentPartDoneEvent),
    (events.OutputTextDeltaEvent, responses_sdk.ResponseTextDeltaEvent),
    (events.OutputTextDoneEvent, responses_sdk.ResponseTextDoneEvent),
    (events.AnnotationAddedEvent, responses_sdk.ResponseOutputTextAnnotationAddedEvent),
    (events.FunctionCallArgumentsDeltaEvent, responses_sdk.ResponseFunctionCallArgumentsDeltaEvent),
    (events.FunctionCallArgumentsDoneEvent, responses_sdk.ResponseFunctionCallArgumentsDoneEvent),
    (events.ReasoningSummaryPartEvent, responses_sdk.ResponseReasoningSummaryPartAddedEvent),
    (events.ReasoningSummaryPartEvent, responses_sdk.ResponseReasoningSummaryPartDoneEvent),
    (events.ReasoningSummaryTextDeltaEvent, responses_sdk.ResponseReasoningSummaryTextDeltaEvent),
    (events.ReasoningSummaryTextDoneEvent, responses_sdk.ResponseReasoningSummaryTextDoneEvent),
    (events.ErrorEvent, responses_sdk.ResponseErrorEvent),
    (items.Conversation, conversations_sdk.Conversation),
    (items.DeletedConversation, conversations_sdk.ConversationDeletedResource),
    (chat.ChatCompletion, chat_sdk.ChatCompletion),
    (chat.Choice, chat_completion.Choice),
    (chat.CompletionMessage, chat_sdk.ChatCompletionMessage),
    (chat.UrlCitationAnnotation, chat_completion_message.Annotation),
    (chat.UrlCitationDetail, chat_completion_message.AnnotationURLCitation),
    (chat.ToolCall, function_tool_call.ChatCompletionMessageFunctionToolCall),
    (chat.FunctionCall, function_tool_call.Function),
    (chat.CompletionUsage, completion_usage.CompletionUsage),
    (chat.PromptTokensDetails, completion_usage.PromptTokensDetails),
    (chat.CompletionTokensDetails, completion_usage.CompletionTokensDetails),
    (chat.ChatChunk, chat_sdk.ChatCompletionChunk),
    (chat.UsageChunk, chat_sdk.ChatCompletionChunk),
    (chat.ChunkChoice, chat_completion_chunk.Choice),
    (chat.ChoiceDelta, chat_completion_chunk.ChoiceDelta),
    (chat.ToolCallDelta, chat_completion_chunk.ChoiceDeltaToolCall),
    (models.ModelObject, sdk.Model),
    (ErrorObject, sdk.ErrorObject),
]


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """The SDK model's fields by their names on the wire (`schema`, not `schema_`)."""
    return {field.alias or name: field for name, field in model.model_fields.items()}


def _ids(pair: tuple[type, type[BaseModel]]) -> str:
    return f"{pair[0].__name__}-{pair[1].__name__}"


def _admits_none(annotation: Any) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_admits_none(arg) for arg in get_args(annotation))
    if get_origin(annotation) is typing.Annotated:
        return _admits_none(get_args(annotation)[0])
    return False


def _literals(annotation: Any) -> set[Any] | None:
    """The values a `Literal` (or a union of them) allows; None for any other type."""
    if get_origin(annotation) is Literal:
        found: set[Any] = set()
        for arg in get_args(annotation):
            nested = _literals(arg)
            found |= nested if nested is not None else {arg}
        return found
    if get_origin(annotation) in (typing.Union, types.UnionType):
        values = [_literals(arg) for arg in get_args(annotation) if arg is not type(None)]
        if values and all(value is not None for value in values):
            return set().union(*(value for value in values if value is not None))
    return None


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_every_key_is_a_field_the_sdk_knows(pair: tuple[type, type[BaseModel]]) -> None:
    ours, theirs = pair
    unknown = set(get_type_hints(ours)) - set(_fields(theirs)) - EXTENSIONS.get(ours, set())
    assert not unknown, f"{ours.__name__} sends keys {theirs.__name__} does not define"


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_every_field_the_sdk_requires_is_always_sent(pair: tuple[type, type[BaseModel]]) -> None:
    ours, theirs = pair
    required = {name for name, field in _fields(theirs).items() if field.is_required()}
    missing = required - set(getattr(ours, "__required_keys__", ()))
    assert not missing, f"{ours.__name__} may leave out {theirs.__name__}'s required {missing}"


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_a_field_the_sdk_never_takes_as_null_is_never_null(
    pair: tuple[type, type[BaseModel]],
) -> None:
    ours, theirs = pair
    hints = get_type_hints(ours)
    nullable = {
        name
        for name, field in _fields(theirs).items()
        if name in hints and not _admits_none(field.annotation) and _admits_none(hints[name])
    }
    assert not nullable, f"{ours.__name__} may send null for {theirs.__name__}'s {nullable}"


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_every_literal_is_one_the_sdk_accepts(pair: tuple[type, type[BaseModel]]) -> None:
    ours, theirs = pair
    hints = get_type_hints(ours)
    for name, field in _fields(theirs).items():
        allowed = _literals(field.annotation)
        sent = _literals(hints[name]) if name in hints else None
        if allowed is None or sent is None:
            continue
        if field.is_required() and len(allowed) == 1:
            # One event type per SDK class: ours may cover several (added and done).
            assert allowed <= sent, f"{ours.__name__}.{name} cannot be {allowed}"
        else:
            assert sent <= allowed, f"{ours.__name__}.{name} may be {sent - allowed}"


def test_each_event_type_is_one_the_sdk_has() -> None:
    """An event TypedDict covers exactly the `type`s of the SDK's classes it stands for."""
    covered: dict[type, set[Any]] = {}
    for ours, theirs in PAIRS:
        if ours.__module__ == events.__name__:
            allowed = _literals(_fields(theirs)["type"].annotation) or set()
            covered.setdefault(ours, set()).update(allowed)
    for ours, allowed in covered.items():
        assert _literals(get_type_hints(ours)["type"]) == allowed, ours.__name__
