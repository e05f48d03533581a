"""Model discovery with the `lgos` extension."""

from __future__ import annotations

import httpx2
import pytest
from openai import AsyncOpenAI, NotFoundError

from tests.support.graphs import single_node

pytestmark = pytest.mark.anyio


async def test_listing_has_one_entry_per_graph_with_features(client: AsyncOpenAI) -> None:
    models = await client.models.list()
    by_id = {model.id: model for model in models.data}
    assert {"echo", "approval"} <= set(by_id)
    approval = by_id["approval"].model_extra["lgos"]  # type: ignore[index]
    assert approval["features"] == ["interrupts"]
    assert approval["description"] == "Asks"
    assert by_id["tool-caller"].model_extra["lgos"]["client_tools"] == ["get_weather"]  # type: ignore[index]
    assert "client_settings" not in by_id["echo"].model_extra["lgos"]  # type: ignore[index]


async def test_detail_publishes_the_settings_schema_and_defaults(client: AsyncOpenAI) -> None:
    model = await client.models.retrieve("echo")
    settings = model.model_extra["lgos"]["client_settings"]  # type: ignore[index]
    assert settings["defaults"] == {"prefix": "echo", "repeat": 1}
    assert set(settings["json_schema"]["properties"]) == {"prefix", "repeat"}


async def test_unknown_model_is_404_model_not_found(client: AsyncOpenAI) -> None:
    with pytest.raises(NotFoundError) as raised:
        await client.models.retrieve("nope/with-slash")
    assert raised.value.code == "model_not_found"


async def test_health_and_version(http: httpx2.AsyncClient) -> None:
    assert (await http.get("/v1/health")).status_code == 200
    assert (await http.get("/v1/version")).json()["version"]


async def test_unknown_route_gets_an_openai_error(http: httpx2.AsyncClient) -> None:
    response = await http.get("/v1/files")
    assert response.status_code == 404
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_a_graph_meant_for_the_background_says_so() -> None:
    from lgos import ConfigurationError, GraphConfig, GraphFeature
    from lgos.wire.models import model_object

    graph = single_node(lambda state: {})
    long_work = GraphConfig(
        graph=graph,
        description="Long work",
        features=frozenset({GraphFeature.BACKGROUND}),
        background_by_default=True,
    )
    assert model_object("long", long_work, detail=False)["lgos"]["background_by_default"] is True
    chat = GraphConfig(graph=graph, description="Chat")
    assert model_object("chat", chat, detail=False)["lgos"]["background_by_default"] is False
    with pytest.raises(ConfigurationError, match="background feature"):
        GraphConfig(graph=graph, description="No engine", background_by_default=True)


def test_a_declared_answer_shape_needs_structured_output_and_a_valid_object_schema() -> None:
    from lgos import ConfigurationError, GraphConfig, GraphFeature

    graph = single_node(lambda state: {})
    structured = frozenset({GraphFeature.STRUCTURED_OUTPUT})
    shape = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert GraphConfig(graph=graph, description="ok", features=structured, output_schema=shape)
    with pytest.raises(ConfigurationError, match="structured_output feature"):
        GraphConfig(graph=graph, description="no feature", output_schema=shape)
    with pytest.raises(ConfigurationError, match="object schema"):
        GraphConfig(
            graph=graph, description="a list", features=structured, output_schema={"type": "array"}
        )
    with pytest.raises(ConfigurationError, match="output_schema"):
        GraphConfig(
            graph=graph,
            description="broken",
            features=structured,
            output_schema={"type": "object", "properties": 3},
        )
