"""Unit tests of the app's pure rules (lgos_ui.py): no Chainlit, no server, no browser."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lgos_ui as ui

SETTINGS = {
    "json_schema": {
        "type": "object",
        "properties": {
            "audience": {"type": "string", "enum": ["general", "expert"], "default": "expert"},
            "enthusiastic": {"type": "boolean", "title": "Be enthusiastic"},
            "signature": {"type": "string"},
            "delay_seconds": {"type": "integer", "minimum": 0, "maximum": 300},
            "unbounded": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    },
    "defaults": {"audience": "general", "enthusiastic": False, "signature": "", "delay_seconds": 5},
}


def test_catalog_entry_without_lgos_metadata_has_limited_functionality() -> None:
    plain = ui.parse_model({"id": "gpt-x", "object": "model"})
    assert not plain.has_lgos
    assert not plain.supports_background
    assert "Limited functionality" in ui.profile_description(plain)
    full = ui.parse_model({"id": "bg", "lgos": {"description": "d", "features": ["background"]}})
    assert full.has_lgos
    assert full.supports_background
    assert "Limited" not in ui.profile_description(full)


def test_schema_subset_becomes_widgets_with_authoritative_defaults() -> None:
    specs = {s.key: s for s in ui.setting_specs(SETTINGS)}
    assert set(specs) == {"audience", "enthusiastic", "signature", "delay_seconds"}
    assert specs["audience"].kind == "select"
    assert specs["audience"].default == "general"  # `defaults` wins over the schema keyword
    assert specs["audience"].choices == ["general", "expert"]
    assert specs["enthusiastic"].kind == "switch"
    assert specs["enthusiastic"].label == "Be enthusiastic"
    assert specs["signature"].kind == "text"
    slider = specs["delay_seconds"]
    assert (slider.kind, slider.minimum, slider.maximum, slider.default) == ("slider", 0, 300, 5)


def test_only_changed_settings_are_sent() -> None:
    specs = ui.setting_specs(SETTINGS)
    values = {
        "audience": "general",  # unchanged
        "enthusiastic": True,
        "delay_seconds": 0.0,  # sliders report floats
        "signature": "",
        ui.BACKGROUND_SWITCH: True,  # a client switch, never a graph setting
    }
    changed = ui.changed_settings(specs, values)
    assert changed == {"enthusiastic": True, "delay_seconds": 0}
    metadata = ui.request_metadata(changed, "thread-1")
    assert json.loads(metadata["lgos_settings"]) == {"delay_seconds": 0, "enthusiastic": True}
    assert metadata["conversation_id"] == "thread-1"
    assert ui.request_metadata({}, None) == {}


def message(text: str, phase: str, annotations: list | None = None) -> dict:
    content = [{"type": "output_text", "text": text, "annotations": annotations or []}]
    return {"type": "message", "role": "assistant", "phase": phase, "content": content}


def test_output_splits_commentary_answer_citations_and_reviews() -> None:
    cite = {"type": "url_citation", "url": "https://example.org/a", "title": "A"}
    output = [
        message("Reading the question", "commentary"),
        message("The answer.", "final_answer", [cite, dict(cite)]),
        {
            "type": "function_call",
            "name": "lgos_interrupt",
            "call_id": "call_1",
            "arguments": "{}",
        },
        {"type": "function_call", "name": "other_tool", "call_id": "call_2", "arguments": "{}"},
    ]
    rendered = ui.split_output(output)
    assert rendered.commentary == ["Reading the question"]
    assert rendered.answer == "The answer."
    assert [c.url for c in rendered.citations] == ["https://example.org/a"]
    assert [r["call_id"] for r in rendered.reviews] == ["call_1"]
    assert ui.sources_markdown(rendered.citations) == "**Sources**\n1. [A](https://example.org/a)"
    # A report that already lists its sources (deep-research) gets no second list.
    linked = "See [A](https://example.org/a)."
    assert ui.sources_markdown(rendered.citations, linked) == ""


def test_review_with_fixed_choices_offers_buttons_only() -> None:
    args = {"question": "Approve?", "choices": ["approve", "reject"], "report": "R"}
    review = ui.parse_review({"call_id": "c", "arguments": json.dumps(args)})
    assert review.choices == ["approve", "reject"]
    assert not review.free_text
    assert "R" in ui.review_markdown(review)
    assert "type your feedback" not in ui.review_markdown(review)


def test_review_that_allows_other_answers_accepts_typed_feedback() -> None:
    args = {"question": "Publish?", "choices": ["approve", "reject"], "allow_other": True}
    review = ui.parse_review({"call_id": "c", "arguments": json.dumps(args)})
    assert review.free_text
    assert "allow" not in review.details.lower()
    feedback = ui.parse_review(
        {"call_id": "c", "arguments": json.dumps({"question": "Q", "choices": ["ok", "feedback"]})}
    )
    assert feedback.choices == ["ok"]
    assert feedback.free_text
    plain = ui.parse_review({"call_id": "c", "arguments": json.dumps("Continue?")})
    assert plain.question == "Continue?"
    assert plain.free_text


def test_background_status_is_readable() -> None:
    assert ui.status_line("queued", 1.7) == "Background run: **Queued** (1 s)"
    assert ui.status_line("in_progress", 12) == "Background run: **In progress** (12 s)"
    assert ui.status_line("cancelled", 40) == "Background run: **Cancelled**"
