"""`/v1/models` objects (`openai.types.Model`) with the `lgos` extension."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from pydantic import JsonValue

from lgos.core.json_schema import JsonSchema
from lgos.core.registry import GraphFeature


class ClientSettingsInfo(TypedDict):
    json_schema: JsonSchema
    defaults: dict[str, JsonValue]  # the graph's settings values


class LgosModelInfo(TypedDict):
    """What clients read to adapt their UI to a graph."""

    description: str
    features: list[GraphFeature]
    server_tools: list[str]
    client_tools: list[str]
    hosted_tools: list[str]
    background_by_default: bool
    client_settings: NotRequired[ClientSettingsInfo]


class ModelObject(TypedDict):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    name: str
    description: str
    lgos: LgosModelInfo


class ModelList(TypedDict):
    object: Literal["list"]
    data: list[ModelObject]
