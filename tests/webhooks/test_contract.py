"""The webhook contract without processes: which events an end produces, their ids, the
settings' env form, and signatures the official SDK accepts."""

from __future__ import annotations

import json
import time

import openai
import pytest
from openai import OpenAI

from lgos.core.errors import ConfigurationError
from lgos.core.webhooks import deliveries, event_id, event_types, signed_headers
from lgos.server.settings import ServerSettings
from tests.webhooks.conftest import SECRET, WRONG_SECRET

URL = "http://127.0.0.1:9/hooks"
INTERRUPT = {"type": "function_call", "name": "lgos_interrupt", "call_id": "c", "arguments": "{}"}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ({"status": "completed", "output": []}, ["response.completed"]),
        ({"status": "failed"}, ["response.failed"]),
        ({"status": "incomplete", "output": []}, ["response.incomplete"]),
        ({"status": "cancelled"}, ["response.cancelled"]),
        (
            {"status": "completed", "output": [INTERRUPT]},
            ["response.completed", "lgos.response.paused"],
        ),
        ({"status": "in_progress"}, []),
    ],
)
def test_each_end_maps_to_its_event_types(response: dict[str, object], expected: list[str]) -> None:
    assert event_types(response) == expected


def test_settings_from_the_environment_sign_events_the_sdk_verifies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoints = [
        {"url": URL, "secret": SECRET, "events": ["response.incomplete"]},
        {"url": "http://127.0.0.1:9/other", "secret": WRONG_SECRET},
    ]
    monkeypatch.setenv("LGOS_WEBHOOKS", json.dumps(endpoints))
    settings = ServerSettings.from_environment().webhooks()
    assert settings is not None
    found = deliveries(settings, "resp_1", ["response.incomplete"], 1_700_000_000)
    # Both want it: the second by default (OpenAI's four types).
    assert [delivery.url for delivery in found] == [URL, "http://127.0.0.1:9/other"]
    event = found[0].event
    assert event.id == event_id("resp_1", "response.incomplete")
    body = event.body()
    headers = signed_headers(settings.endpoints[0], event, body, int(time.time()))
    unwrapped = OpenAI(api_key="unused").webhooks.unwrap(body, headers, secret=SECRET)
    assert unwrapped.type == "response.incomplete"
    assert unwrapped.data.id == "resp_1"
    assert unwrapped.created_at == 1_700_000_000
    with pytest.raises(openai.InvalidWebhookSignatureError):
        OpenAI(api_key="unused").webhooks.unwrap(body, headers, secret=WRONG_SECRET)
    # The pause is opt-in: neither endpoint asked for it.
    assert deliveries(settings, "resp_1", ["lgos.response.paused"], 0) == []


@pytest.mark.parametrize("secret", ["plain-secret", "whsec_not base64!", "whsec_c2hvcnQ="])
def test_a_bad_secret_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    monkeypatch.setenv("LGOS_WEBHOOKS", json.dumps([{"url": URL, "secret": secret}]))
    with pytest.raises(ConfigurationError, match="LGOS_WEBHOOKS") as raised:
        ServerSettings.from_environment()
    # The message is printed by `lgos serve`: it names the variable, never the secret.
    assert secret not in str(raised.value)


def test_no_endpoint_means_no_webhooks() -> None:
    assert ServerSettings(WEBHOOKS=[]).webhooks() is None
