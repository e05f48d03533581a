"""Chat Completions, Responses and model discovery, as a client sees them.

Written once, run against every target (see test_litellm.py, test_direct.py,
test_bifrost.py).
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx2
import openai
import pytest
from openai import OpenAI

from .suite_background import expect_error, review_calls, settings, unique_prompt
from .targets import Target

CHAT_MODEL = os.environ.get("DEMO_CHAT_MODEL") or "simple-graph"
APPROVAL_MODEL = os.environ.get("DEMO_APPROVAL_MODEL") or "interruptible-approval"
# What `demo.registry:create_registry` serves (override for another registry).
DEMO_MODELS = (
    os.environ.get("DEMO_MODELS")
    or "simple-graph,multi-node-streaming,status-events,streaming-long-mock,"
    "interruptible-approval,background-mock,background-interrupt,deep-research"
).split(",")
# Features a client relies on to offer a background switch or a review UI.
EXPECTED_FEATURES = {
    "background-mock": {"background"},
    "background-interrupt": {"background", "interrupts"},
    "interruptible-approval": {"interrupts"},
    "deep-research": {"background", "interrupts"},
}


def lgos_metadata(target: Target, model: str) -> dict[str, Any] | None:
    """The `lgos` model metadata as a client behind `target` can read it.

    Directly it is the `lgos` object of GET /v1/models/{id}. LiteLLM's
    /v1/models drops unknown fields, so the gateway serves it from its config as
    `model_info.lgos` on /model/info. Returns None when the target has none.
    """
    with target.http() as http:
        if target.name == "litellm":
            root = target.base_url.removesuffix("/v1")
            resp = http.get(f"{root}/model/info")
            resp.raise_for_status()
            for entry in resp.json()["data"]:
                if entry["model_name"] == model:
                    info = entry.get("model_info") or {}
                    return info.get("lgos")
            return None
        resp = http.get(f"/models/{target.model(model)}")
        resp.raise_for_status()
        return resp.json().get("lgos")


def api_metadata(api_url: str, model: str) -> dict[str, Any]:
    """The metadata the LGOS API itself publishes for `model`."""
    resp = httpx2.get(f"{api_url}/models/{model}", timeout=30)
    resp.raise_for_status()
    return dict(resp.json()["lgos"])


class ApiSuite:
    """Subclasses provide the `target` fixture."""

    @pytest.fixture
    def target(self) -> Target:
        raise NotImplementedError

    @pytest.fixture
    def target_client(self, target: Target) -> OpenAI:
        """The SDK through this target (a gateway, or the API itself)."""
        return target.sdk()

    # ------------------------------------------------------------- models
    def test_every_demo_model_is_listed(self, target: Target, target_client: OpenAI) -> None:
        ids = {model.id for model in target_client.models.list()}
        missing = {target.model(m) for m in DEMO_MODELS} - ids
        assert not missing, f"not listed through {target.name}: {sorted(missing)}"

    def test_model_metadata_reaches_the_client(self, target: Target) -> None:
        for model in DEMO_MODELS:
            meta = lgos_metadata(target, model)
            assert meta is not None, f"{model}: no lgos metadata through {target.name}"
            assert meta["description"], model
            assert set(EXPECTED_FEATURES.get(model, set())) <= set(meta["features"]), model
            assert meta["features"] == sorted(meta["features"]), model
            if target.api_url and target.name != "direct":
                # The gateway's copy must not drift from what the API serves.
                assert meta == api_metadata(target.api_url, model), (
                    f"{model}: gateway metadata differs from the API; "
                    "run demo/litellm/sync_config.py"
                )

    def test_settings_schema_is_published_for_background_models(self, target: Target) -> None:
        meta = lgos_metadata(target, "background-mock")
        assert meta is not None
        client_settings = meta["client_settings"]
        assert client_settings["defaults"]["delay_seconds"] == 5
        prop = client_settings["json_schema"]["properties"]["delay_seconds"]
        assert prop["type"] == "integer"
        assert (prop["minimum"], prop["maximum"]) == (0, 300)

    def test_an_unknown_model_is_an_error(self, target: Target, target_client: OpenAI) -> None:
        with pytest.raises(openai.APIStatusError) as caught:
            target_client.chat.completions.create(
                model=target.model("no-such-graph"),
                messages=[{"role": "user", "content": "hi"}],
            )
        if target.native_errors:
            expect_error(target, caught.value, 404, code="model_not_found")
        else:
            # A gateway answers for models it does not route itself.
            assert caught.value.status_code in (400, 404), caught.value.message
            assert "no-such-graph" in str(caught.value.message)

    # --------------------------------------------------- chat completions
    def test_chat_streamed_and_not_give_the_same_answer(
        self, target: Target, target_client: OpenAI
    ) -> None:
        messages: list[Any] = [{"role": "user", "content": "Explain checkpoints briefly."}]
        whole = target_client.chat.completions.create(
            model=target.model(CHAT_MODEL), messages=messages
        )
        choice = whole.choices[0]
        assert choice.finish_reason == "stop"
        assert choice.message.role == "assistant"
        assert choice.message.content

        parts: list[str] = []
        finish = None
        stream = target.sdk().chat.completions.create(
            model=target.model(CHAT_MODEL), messages=messages, stream=True
        )
        for chunk in stream:
            for delta_choice in chunk.choices:
                parts.append(delta_choice.delta.content or "")
                finish = delta_choice.finish_reason or finish
        assert finish == "stop"
        assert len([p for p in parts if p]) > 1, "the answer should arrive in several chunks"
        assert "".join(parts) == choice.message.content

    def test_chat_on_a_review_graph_returns_the_review_as_a_tool_call(
        self, target: Target, target_client: OpenAI
    ) -> None:
        completion = target_client.chat.completions.create(
            model=target.model(APPROVAL_MODEL),
            messages=[{"role": "user", "content": "Refund order 1234"}],
        )
        choice = completion.choices[0]
        assert choice.finish_reason == "tool_calls"
        calls = choice.message.tool_calls or []
        assert [call.function.name for call in calls] == ["lgos_interrupt"]  # type: ignore[union-attr]
        json.loads(calls[0].function.arguments)  # type: ignore[union-attr]

    # ---------------------------------------------------------- responses
    def test_responses_streamed_and_not_give_the_same_answer(
        self, target: Target, target_client: OpenAI
    ) -> None:
        prompt = "Explain checkpoints briefly."
        whole = target_client.responses.create(model=target.model(CHAT_MODEL), input=prompt)
        assert whole.status == "completed"
        assert whole.output_text

        streamer = target.sdk()
        events = list(
            streamer.responses.create(model=target.model(CHAT_MODEL), input=prompt, stream=True)
        )
        types = [event.type for event in events]
        assert types[0] == "response.created"
        assert types[-1] == "response.completed"
        numbers = [event.sequence_number for event in events]
        assert numbers == sorted(set(numbers)), "sequence numbers must strictly increase"
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        final = events[-1].response  # type: ignore[union-attr]
        assert deltas == final.output_text == whole.output_text

    def test_progress_arrives_as_commentary_before_the_answer(
        self, target: Target, target_client: OpenAI
    ) -> None:
        events = list(
            target.sdk().responses.create(
                model=target.model("status-events"), input="Prepare the media", stream=True
            )
        )
        done_items = [e.item.model_dump() for e in events if e.type == "response.output_item.done"]
        phases = [item.get("phase") for item in done_items if item["type"] == "message"]
        assert "commentary" in phases
        assert phases[-1] == "final_answer"
        assert phases.index("commentary") < phases.index("final_answer")
        # Progress messages stay out of the answer message. (The SDK's
        # `output_text` joins every message, commentary included, so a UI must
        # pick the final_answer message itself.)
        texts = {
            phase: [
                part["text"]
                for item in done_items
                if item.get("phase") == phase
                for part in item["content"]
            ]
            for phase in ("commentary", "final_answer")
        }
        answer = "".join(texts["final_answer"])
        assert answer
        assert all(text not in answer for text in texts["commentary"] if text)

    def test_multi_node_answer_streams_in_order(
        self, target: Target, target_client: OpenAI
    ) -> None:
        whole = target_client.responses.create(
            model=target.model("multi-node-streaming"), input="go"
        )
        events = list(
            target.sdk().responses.create(
                model=target.model("multi-node-streaming"), input="go", stream=True
            )
        )
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert deltas
        assert events[-1].response.output_text == whole.output_text  # type: ignore[union-attr]

    def test_a_foreground_review_is_answered_once(
        self, target: Target, target_client: OpenAI
    ) -> None:
        paused = target_client.responses.create(
            model=target.model(APPROVAL_MODEL), input=unique_prompt("Refund order")
        )
        assert paused.status == "completed"
        calls = review_calls(paused)
        assert calls, paused.output
        answer = [
            {"type": "function_call_output", "call_id": call.call_id, "output": "approve"}
            for call in calls
        ]
        resumed = target_client.responses.create(
            model=target.model(APPROVAL_MODEL), previous_response_id=paused.id, input=answer
        )
        assert resumed.status == "completed"
        assert review_calls(resumed) == []
        assert resumed.output_text

        with pytest.raises(openai.APIStatusError) as caught:
            target_client.responses.create(
                model=target.model(APPROVAL_MODEL), previous_response_id=paused.id, input=answer
            )
        expect_error(target, caught.value, 409, code="interrupt_state_conflict")

    def test_an_invalid_setting_is_rejected(self, target: Target, target_client: OpenAI) -> None:
        with pytest.raises(openai.APIStatusError) as caught:
            target_client.responses.create(
                model=target.model(CHAT_MODEL),
                input="hello",
                metadata=settings(no_such_setting=True),
            )
        expect_error(target, caught.value, 400, param="metadata.lgos_settings")
