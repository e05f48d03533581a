"""The model switch of the demo graphs, and the citation spans of model-written reports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from demo.corpus import default_corpus
from demo.graphs.deep_research import Source, citation_annotations
from demo.graphs.fake_model import ScriptedChatModel
from demo.graphs.models import (
    API_KEY_VARIABLE,
    BASE_URL_VARIABLE,
    MODEL_VARIABLE,
    chat_model,
    real_model_config,
)
from lgos import ConfigurationError
from tests.demo.support import demo_app
from tests.support.processes import clean_environment, serving
from tests.support.sdk import in_process_sdk

FAKE = ScriptedChatModel(script=lambda _messages: "fake")


def test_no_configuration_means_the_fake() -> None:
    assert real_model_config({}) is None
    assert chat_model(FAKE, {}) is FAKE


def test_a_half_configuration_is_an_error_not_a_silent_fake() -> None:
    with pytest.raises(ConfigurationError, match=MODEL_VARIABLE):
        real_model_config({BASE_URL_VARIABLE: "http://127.0.0.1:9/v1"})
    with pytest.raises(ConfigurationError, match=API_KEY_VARIABLE):
        real_model_config({MODEL_VARIABLE: "gpt-test"})


def test_a_full_configuration_selects_an_openai_compatible_model() -> None:
    environ = {
        MODEL_VARIABLE: "gpt-test",
        API_KEY_VARIABLE: "sk-secret",
        BASE_URL_VARIABLE: "http://127.0.0.1:9/v1",
    }
    config = real_model_config(environ)
    assert config is not None
    assert "sk-secret" not in repr(config)
    model = chat_model(FAKE, environ)
    assert type(model).__name__ == "ChatOpenAI"
    assert model.model_name == "gpt-test"  # type: ignore[attr-defined]


def test_citations_span_the_claim_before_each_marker() -> None:
    documents = list(default_corpus().documents.values())
    sources = [Source(1, documents[0]), Source(2, documents[1])]
    text = (
        "## Findings\n\n"
        "Output rose sharply [1][2]. Seals avoid the kites [2], and noise fades fast.\n"
        "- A bulleted claim. [1]\n"
        "[2] a marker with nothing before it\n"
        "An unknown source [7]."
    )
    spans = [
        (a["url"].partition("#")[0], text[a["start_index"] : a["end_index"]])
        for a in citation_annotations(text, sources)
    ]
    assert spans == [
        (documents[0].url, "Output rose sharply"),
        (documents[1].url, "Output rose sharply"),
        (documents[1].url, "Seals avoid the kites"),
        (documents[0].url, "A bulleted claim."),
    ]


# --- a real OpenAI-compatible server behind the switch -----------------------------------------


@pytest.fixture
def upstream() -> Iterator[str]:
    """`lgos serve` of the demo registry as a separate process: an OpenAI-compatible server
    that needs no key, standing in for a hosted model."""
    env = {
        key: value
        for key, value in clean_environment().items()
        if not key.startswith("DEMO_OPENAI_")
    }
    with serving(
        ["demo.registry:create_registry", "--host", "127.0.0.1", "--port", "0"], env
    ) as server:
        yield f"{server.base_url}/v1"


@pytest.mark.processes
@pytest.mark.timeout(600)
@pytest.mark.anyio
async def test_simple_graph_answers_through_a_configured_real_model(
    upstream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The upstream's own simple-graph plays the hosted model; ours must relay its answer.
    monkeypatch.setenv(BASE_URL_VARIABLE, upstream)
    monkeypatch.setenv(API_KEY_VARIABLE, "not-needed")
    monkeypatch.setenv(MODEL_VARIABLE, "simple-graph")
    app = demo_app()
    async with app.router.lifespan_context(app), in_process_sdk(app) as client:
        stream = await client.responses.create(
            model="simple-graph", input="Ping from downstream", stream=True
        )
        deltas: list[str] = []
        final = None
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
            elif event.type == "response.completed":
                final = event.response
    assert final is not None
    expected = "Here is a short answer: you said 'Ping from downstream'."
    assert final.output_text == expected
    assert "".join(deltas) == expected
    assert len(deltas) > 1  # streamed through ChatOpenAI token by token
