"""Background Responses and background human review, as a client sees them.

Written once, run against every target (see test_background_gateway.py,
test_direct.py, test_bifrost.py). Ids are compared decoded, because LiteLLM
re-encodes every Response id it hands out.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import openai
import pytest
from openai import OpenAI
from openai.types.responses import Response, ResponseFunctionToolCall

from .targets import Target

BACKGROUND_MODEL = os.environ.get("DEMO_BACKGROUND_MODEL") or "background-mock"
REVIEW_MODEL = os.environ.get("DEMO_REVIEW_MODEL") or "background-interrupt"
FOREGROUND_MODEL = os.environ.get("DEMO_CHAT_MODEL") or "simple-graph"
INTERRUPT_TOOL = "lgos_interrupt"


def settings(**values: Any) -> dict[str, str]:
    """Per-request graph settings travel as a JSON string in metadata."""
    return {"lgos_settings": json.dumps(values)}


def unique_prompt(label: str) -> str:
    # Unique per test so replays and answers can never match another test's run.
    return f"{label} {uuid.uuid4().hex[:8]}"


def review_calls(response: Response) -> list[ResponseFunctionToolCall]:
    return [
        item
        for item in response.output
        if item.type == "function_call" and item.name == INTERRUPT_TOOL
    ]


def expect_error(
    target: Target,
    exc: openai.APIStatusError,
    status: int,
    code: str | None = None,
    param: str | None = None,
) -> None:
    """The status a client sees, plus LGOS's code/param where the target keeps them."""
    assert exc.status_code == status, f"{exc.status_code}: {exc.message}"
    if target.native_errors:
        body = exc.body if isinstance(exc.body, dict) else {}
        if code is not None:
            assert body.get("code") == code, body
        if param is not None:
            assert body.get("param") == param, body
    elif code is not None:
        # Gateways rewrite the envelope's type/code but keep LGOS's message or code text.
        assert code in str(exc.message) or code in str(exc.body), exc.message


class BackgroundSuite:
    """Subclasses provide the `target` fixture."""

    @pytest.fixture
    def target(self) -> Target:
        raise NotImplementedError

    @pytest.fixture
    def target_client(self, target: Target) -> OpenAI:
        """The SDK through this target (a gateway, or the API itself)."""
        return target.sdk()

    # ------------------------------------------------------------ lifecycle
    def test_create_is_queued_and_a_new_client_polls_it_to_completion(
        self, target: Target, target_client: OpenAI
    ) -> None:
        prompt = unique_prompt("Migration risks")
        created = target_client.responses.create(
            model=target.model(BACKGROUND_MODEL),
            input=prompt,
            background=True,
            metadata=settings(delay_seconds=1),
        )
        assert created.status == "queued"
        assert created.background is True
        assert created.output == []

        # A different client that shares nothing but the id, as after a page reload.
        done = target.poll(target.sdk(), created.id)
        assert done.status == "completed", done.error
        assert target.raw_id(done.id) == target.raw_id(created.id)
        assert done.output_text.startswith(f"Background report for: {prompt}")

    def test_cancel_stops_a_running_response(self, target: Target, target_client: OpenAI) -> None:
        created = target_client.responses.create(
            model=target.model(BACKGROUND_MODEL),
            input=unique_prompt("Long report"),
            background=True,
            metadata=settings(delay_seconds=300),
        )
        cancelled = target_client.responses.cancel(created.id, **target.lifecycle())
        # LiteLLM answers cancel with the raw LGOS id, hence the decoded comparison.
        assert target.raw_id(cancelled.id) == target.raw_id(created.id)
        final = target.poll(target.sdk(), created.id)
        assert final.status == "cancelled"
        assert final.output_text == ""

    def test_cancel_of_a_finished_response_returns_it_unchanged(
        self, target: Target, target_client: OpenAI
    ) -> None:
        prompt = unique_prompt("Short report")
        created = target_client.responses.create(
            model=target.model(BACKGROUND_MODEL),
            input=prompt,
            background=True,
            metadata=settings(delay_seconds=0),
        )
        done = target.poll(target_client, created.id)
        assert done.status == "completed"
        after = target_client.responses.cancel(created.id, **target.lifecycle())
        assert after.status == "completed"
        assert after.output_text == done.output_text
        assert target.poll(target_client, created.id).status == "completed"

    # ---------------------------------------------------------- idempotency
    def test_a_replayed_create_with_the_same_key_returns_the_same_response(
        self, target: Target
    ) -> None:
        for style, carry in target.idempotency_styles.items():
            prompt = unique_prompt(f"Idempotent {style}")
            key = str(uuid.uuid4())
            request: dict[str, Any] = {
                "model": target.model(BACKGROUND_MODEL),
                "input": prompt,
                "background": True,
                "metadata": settings(delay_seconds=1),
            }
            first = target.sdk().responses.create(**request, **carry(key))
            # The retry comes from another client, as after a timeout and reconnect.
            replay = target.sdk().responses.create(**request, **carry(key))
            assert target.raw_id(replay.id) == target.raw_id(first.id), style

            other = target.sdk().responses.create(**request, **carry(str(uuid.uuid4())))
            assert target.raw_id(other.id) != target.raw_id(first.id), style

            done = target.poll(target.sdk(), replay.id)
            assert done.status == "completed", style
            assert done.output_text.startswith(f"Background report for: {prompt}"), style

    def test_a_reused_key_with_a_different_request_is_rejected(self, target: Target) -> None:
        carry = next(iter(target.idempotency_styles.values()))
        key = str(uuid.uuid4())
        base: dict[str, Any] = {
            "model": target.model(BACKGROUND_MODEL),
            "background": True,
            "metadata": settings(delay_seconds=0),
        }
        target.sdk().responses.create(input=unique_prompt("first"), **base, **carry(key))
        with pytest.raises(openai.APIStatusError) as caught:
            target.sdk().responses.create(input=unique_prompt("second"), **base, **carry(key))
        expect_error(target, caught.value, 409, code="idempotency_key_reused")

    # ----------------------------------------------------- streaming in the background
    def test_background_stream_runs_to_the_end(self, target: Target) -> None:
        prompt = unique_prompt("stream it")
        events = list(
            target.sdk().responses.create(
                model=target.model(BACKGROUND_MODEL),
                input=prompt,
                background=True,
                stream=True,
                metadata=settings(delay_seconds=0),
            )
        )
        types = [event.type for event in events]
        assert types[0] == "response.created", types
        assert types[-1] == "response.completed", types
        final = events[-1].response  # type: ignore[union-attr]
        assert final.output_text.endswith(f"Background report for: {prompt}")
        done = target.poll(target.sdk(), final.id)
        assert done.status == "completed"

    def test_background_stream_replays_and_resumes(
        self, target: Target, target_client: OpenAI
    ) -> None:
        """A client that lost its stream reads it again (`retrieve(stream=True)`), or from
        where it was (`starting_after`): through LiteLLM from 1.110 on too."""
        created = list(
            target_client.responses.create(
                model=target.model(BACKGROUND_MODEL),
                input=unique_prompt("replay it"),
                background=True,
                stream=True,
                metadata=settings(delay_seconds=0),
            )
        )
        final = created[-1].response  # type: ignore[union-attr]
        replay = list(target_client.responses.retrieve(final.id, stream=True))
        assert [e.type for e in replay] == [e.type for e in created]
        assert replay[-1].response.output_text == final.output_text  # type: ignore[union-attr]
        resumed = list(target_client.responses.retrieve(final.id, stream=True, starting_after=2))
        assert [e.sequence_number for e in resumed] == [
            e.sequence_number for e in created if e.sequence_number > 2
        ]

    # ----------------------------------------------------- what is rejected
    def test_background_on_a_model_without_background_support_is_rejected(
        self, target: Target, target_client: OpenAI
    ) -> None:
        with pytest.raises(openai.APIStatusError) as caught:
            target_client.responses.create(
                model=target.model(FOREGROUND_MODEL), input="hello", background=True
            )
        expect_error(target, caught.value, 400, param="background")

    def test_an_out_of_range_setting_is_rejected(
        self, target: Target, target_client: OpenAI
    ) -> None:
        with pytest.raises(openai.APIStatusError) as caught:
            target_client.responses.create(
                model=target.model(BACKGROUND_MODEL),
                input="too slow",
                background=True,
                metadata=settings(delay_seconds=301),
            )
        expect_error(target, caught.value, 400, param="metadata.lgos_settings")

    # --------------------------------------------- background human review
    def start_review(self, target: Target, target_client: OpenAI, prompt: str) -> Response:
        """First background Response (R1): prepares the report and completes with a review call."""
        created = target_client.responses.create(
            model=target.model(REVIEW_MODEL),
            input=prompt,
            background=True,
            metadata=settings(delay_seconds=0),
        )
        assert created.status == "queued"
        paused = target.poll(target.sdk(), created.id)
        assert paused.status == "completed", paused.error
        calls = review_calls(paused)
        assert len(calls) == 1, paused.output
        question = json.loads(calls[0].arguments)
        assert question["choices"] == ["approve", "reject"]
        assert question["question"]
        assert question["report"]
        return paused

    def answer(
        self, target: Target, target_client: OpenAI, paused: Response, answer: str, background: bool
    ) -> Response:
        return target_client.responses.create(
            model=target.model(REVIEW_MODEL),
            previous_response_id=paused.id,
            input=[
                {"type": "function_call_output", "call_id": call.call_id, "output": answer}
                for call in review_calls(paused)
            ],
            background=background,
            metadata=settings(delay_seconds=0),
        )

    def test_background_review_approved_in_a_second_background_response(
        self, target: Target, target_client: OpenAI
    ) -> None:
        prompt = unique_prompt("Quarterly risks")
        paused = self.start_review(target, target_client, prompt)

        resumed = self.answer(target, target_client, paused, "approve", background=True)
        assert resumed.status == "queued"
        assert target.raw_id(resumed.id) != target.raw_id(paused.id)

        final = target.poll(target.sdk(), resumed.id)
        assert final.status == "completed", final.error
        assert final.output_text.startswith(f"Background report for: {prompt}")
        assert review_calls(final) == []
        assert final.previous_response_id is not None
        assert target.raw_id(final.previous_response_id) == target.raw_id(paused.id)

        # R1 keeps its review call: there is no paused status to leave.
        again = target_client.responses.retrieve(paused.id, **target.lifecycle())
        assert [c.call_id for c in review_calls(again)] == [c.call_id for c in review_calls(paused)]

    def test_background_review_rejected_in_a_second_background_response(
        self, target: Target, target_client: OpenAI
    ) -> None:
        prompt = unique_prompt("Vendor audit")
        paused = self.start_review(target, target_client, prompt)
        resumed = self.answer(target, target_client, paused, "reject", background=True)
        final = target.poll(target.sdk(), resumed.id)
        assert final.status == "completed", final.error
        assert "rejected" in final.output_text.lower()
        assert not final.output_text.startswith("Background report for:")

    def test_a_second_answer_to_the_same_review_conflicts(
        self, target: Target, target_client: OpenAI
    ) -> None:
        paused = self.start_review(target, target_client, unique_prompt("Budget review"))
        first = self.answer(target, target_client, paused, "approve", background=True)
        assert target.poll(target.sdk(), first.id).status == "completed"

        # Answered already: a foreground answer is refused at once...
        with pytest.raises(openai.APIStatusError) as caught:
            self.answer(target, target_client, paused, "reject", background=False)
        expect_error(target, caught.value, 409, code="interrupt_state_conflict")

        # ...and a background one is refused too: at once (409) if the API already
        # knows, otherwise its run fails when it checks the checkpoint.
        try:
            late = self.answer(target, target_client, paused, "reject", background=True)
        except openai.APIStatusError as exc:
            expect_error(target, exc, 409, code="interrupt_state_conflict")
        else:
            outcome = target.poll(target.sdk(), late.id)
            assert outcome.status == "failed"
            assert outcome.error is not None
            assert "rejected" not in outcome.output_text.lower()
