"""The prepared Responses request as one JSON value: the job.

`lgos.service.responses.prepare` checks a request once (model, settings, answers, history) and
writes down the result here: what every snapshot of its Response echoes, the graph request with
its messages already resolved from the conversation, and where its run lives. A background
engine stores this value as its run's input; the worker and the poll read only it, so nothing
after the API decodes or prepares the request again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal, cast

from langchain_core.messages import AnyMessage
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic_core import to_json

from lgos.core.client_settings import ClientSettings
from lgos.core.request import (
    ClientFunctionTool,
    GraphRequest,
    Reasoning,
    ResponseFormat,
    ToolChoice,
)

# The version of the job's shape. Jobs stored before it existed carried the raw request body
# and are read as `LegacyJob` (`lgos.core.background`).
JOB_FORMAT: Literal[2] = 2


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class JobEcho(_Frozen):
    """The request fields every snapshot of the Response echoes (all but its id, which names
    the engine's run and is known only once the run is submitted)."""

    model: str
    instructions: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    tools: list[dict[str, JsonValue]] = Field(default_factory=list)  # as the client sent them
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    background: bool = False
    store: bool = False
    user: str | None = None
    conversation: str | None = None
    # `text.format` and `reasoning` as the API echoed them: wire JSON (a `TextFormat`, a
    # `ReasoningConfig`) that core keeps without reading.
    text_format: Mapping[str, Any] = Field(default_factory=lambda: {"type": "text"})
    reasoning: Mapping[str, Any] | None = None
    truncation: Literal["disabled", "auto"] = "disabled"
    created_at: int = Field(default_factory=lambda: int(time.time()))


class JobRequest(_Frozen):
    """`GraphRequest` as JSON; `settings` holds the client settings' validated values."""

    model: str
    # The conversation's history and this request's input, as the graph receives them.
    messages: list[AnyMessage]
    metadata: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    tools: list[ClientFunctionTool] = Field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    hosted_tools: list[dict[str, JsonValue]] = Field(
        default_factory=list
    )  # as the client sent them
    settings: dict[str, JsonValue] | None = None
    response_format: ResponseFormat | None = None
    reasoning: Reasoning | None = None
    truncation: Literal["disabled", "auto"] = "disabled"

    @classmethod
    def of(cls, request: GraphRequest) -> JobRequest:
        """The JSON form of a request the API has just validated (nothing is checked again)."""
        settings = request.settings
        return cls.model_construct(
            model=request.model,
            # The decoders build only these message types.
            messages=cast(list[AnyMessage], list(request.messages)),
            metadata=dict(request.metadata),
            user=request.user,
            tools=list(request.tools),
            tool_choice=request.tool_choice,
            parallel_tool_calls=request.parallel_tool_calls,
            hosted_tools=[dict(tool) for tool in request.hosted_tools],
            settings=settings.model_dump(mode="json") if settings is not None else None,
            response_format=request.response_format,
            reasoning=request.reasoning,
            truncation=request.truncation,
        )

    def graph_request(self, settings_model: type[ClientSettings] | None) -> GraphRequest:
        """The request to run; the settings become `settings_model` again (the graph's)."""
        settings = None
        if settings_model is not None:
            settings = (
                # JSON validation is the exact inverse of the JSON dump taken by `of`.
                settings_model.model_validate_json(to_json(self.settings))
                if self.settings is not None
                else settings_model()
            )
        return GraphRequest(
            model=self.model,
            messages=tuple(self.messages),
            metadata=self.metadata,
            user=self.user,
            tools=tuple(self.tools),
            tool_choice=self.tool_choice,
            parallel_tool_calls=self.parallel_tool_calls,
            hosted_tools=tuple(self.hosted_tools),
            settings=settings,
            response_format=self.response_format,
            reasoning=self.reasoning,
            truncation=self.truncation,
        )


class JobPlan(_Frozen):
    """Where the run lives (`lgos.service.runs.RunPlan` as JSON)."""

    # The checkpoint thread's run id (None: a graph that runs without a checkpoint).
    run_id: str | None = None
    # Answers to a paused run: interrupt id → the client's output, and where each one was
    # sent (`input[2].output`), so a refused answer points at it. None: a new run.
    answers: dict[str, str] | None = None
    answer_params: dict[str, str] = Field(default_factory=dict)
    # A thread-keeping graph in a stored conversation, and the checkpoint its turn starts from.
    keep_thread: bool = False
    checkpoint_id: str | None = None


class PreparedJob(_Frozen):
    """A prepared Responses request: what its Response echoes, what runs, and where."""

    format: Literal[2] = JOB_FORMAT
    echo: JobEcho
    request: JobRequest
    plan: JobPlan
