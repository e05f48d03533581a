"""Which model the graphs use: the fake unless a real one is fully configured."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI
from pydantic import ValidationError

from {{ cookiecutter.project_slug }}.models import (
    PREFIX,
    ModelSettings,
    real_chat_model,
)

UNSET = {"model": None, "api_key": None, "base_url": None}


def test_nothing_set_means_the_fake() -> None:
    assert real_chat_model(ModelSettings(**UNSET)) is None


def test_a_configured_model_is_used() -> None:
    settings = ModelSettings(model="gpt-test", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    model = real_chat_model(settings)
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "gpt-test"


def test_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{PREFIX}MODEL", "local-model")
    monkeypatch.setenv(f"{PREFIX}API_KEY", "anything")
    settings = ModelSettings()
    assert settings.model == "local-model"
    assert repr(settings).count("anything") == 0  # the key never shows in logs or tracebacks


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({**UNSET, "api_key": "sk-test"}, f"{PREFIX}MODEL is not"),
        ({**UNSET, "base_url": "http://127.0.0.1:9/v1"}, f"{PREFIX}MODEL is not"),
        ({**UNSET, "model": "gpt-test"}, f"{PREFIX}API_KEY is not"),
    ],
)
def test_half_a_configuration_is_refused(values: dict[str, str | None], named: str) -> None:
    with pytest.raises(ValidationError, match=named) as raised:
        ModelSettings(**values)
    assert "sk-test" not in str(raised.value)  # start-up logs never show the key
