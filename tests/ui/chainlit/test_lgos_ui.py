"""Unit tests of the app's pure rules (lgos_ui.py): no Chainlit, no server, no browser."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "demo" / "chainlit"))

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
            "wide": {"type": "integer", "minimum": 1, "maximum": 5000},
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
    assert set(specs) == {
        "audience",
        "enthusiastic",
        "signature",
        "delay_seconds",
        "unbounded",
        "wide",
    }
    assert specs["unbounded"].kind == "integer"  # a number box: never hidden
    wide = specs["wide"]  # too many steps for a slider: a number box that states its range
    assert (wide.kind, wide.minimum, wide.maximum) == ("integer", 1, 5000)
    assert wide.description == "Allowed: 1 to 5000."
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
    assert review.details == "R"
    props = ui.card_props("resp_1", review)
    assert (props["state"], props["content"], props["free_text"]) == ("pending", "R", False)


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
    assert ui.status_line("cancelled", 40) == "Background run: **Cancelled** after 40 s"
    # A long wait in the queue says why: no worker took the run.
    assert ui.status_line("queued", 25, worker_start="just demo/worker") == (
        "Background run: **Queued** (25 s) · no worker has taken this run for 25 s: "
        "start one with `just demo/worker`"
    )
    assert ui.status_line("in_progress", 3, step="Reading") == (
        "Background run: **In progress** (3 s) · Reading"
    )
    # A run that paused for review is waiting, not done.
    assert ui.status_line("completed", 9, paused=True) == (
        "Background run: **Waiting for your review**"
    )


def test_integers_without_bounds_get_a_number_box_and_ranges_are_enforced() -> None:
    settings = {
        "json_schema": {
            "properties": {
                "words": {"type": "integer"},
                "delay": {"type": "integer", "minimum": 0, "maximum": 300},
            }
        },
        "defaults": {"words": 200, "delay": 5},
    }
    specs = {s.key: s for s in ui.setting_specs(settings)}
    assert specs["words"].kind == "integer"
    assert "0 to 300" in (specs["delay"].description or "")
    assert ui.setting_problem(specs["words"], 12) is None
    assert ui.setting_problem(specs["words"], 2.5) == "Words must be a whole number; '2.5' is not."
    assert ui.setting_problem(specs["delay"], 999) == "Delay cannot be 999. Allowed: 0 to 300."


def test_citation_chips_link_the_document_their_number_names() -> None:
    text = "Kites fly [2]. Costs fall [1].\n\n## Sources\n\n1. [Costs](https://c)\n2. [Kites](https://k)"
    item = {
        "type": "message",
        "content": [
            {
                "type": "output_text",
                "text": text,
                # Annotations in another order than the numbers: the marker decides.
                "annotations": [
                    {
                        "type": "url_citation",
                        "url": "https://c",
                        "title": "Costs",
                        "start_index": 15,
                        "end_index": 25,
                    },
                    {
                        "type": "url_citation",
                        "url": "https://k",
                        "title": "Kites",
                        "start_index": 0,
                        "end_index": 9,
                    },
                ],
            }
        ],
    }
    rendered = ui.split_output([item])
    linked = ui.link_markers(rendered.answer, rendered.citations)
    assert "Kites fly [\\[2\\]](https://k)." in linked
    assert "Costs fall [\\[1\\]](https://c)." in linked
    assert "1. [Costs](https://c)" in linked  # the source list itself is left alone


def test_gateway_wrapped_errors_show_the_lgos_message() -> None:
    inner = {
        "error": {
            "message": "Invalid 'audience': expected one of general, expert.",
            "type": "invalid_request_error",
            "param": "metadata.lgos_settings",
            "code": "invalid_value",
        }
    }
    wrapped = "litellm.BadRequestError: OpenAIException - " + json.dumps(inner)
    wrapped += "\nLiteLLM: model group 'g' failed with the error above. No fallback was attempted."
    body = {"error": {"message": wrapped, "type": None, "param": None, "code": "400"}}
    assert ui.readable_error("Error code: 400", body) == inner["error"]["message"]
    assert ui.readable_error("plain", None) == "plain"


def test_the_paperclip_offers_what_the_graph_takes() -> None:
    def model(*features: str) -> ui.ModelInfo:
        return ui.parse_model({"id": "g", "lgos": {"features": list(features)}})

    assert ui.upload_types(model("background")) == []
    assert ui.upload_types(model("image_input")) == list(ui.IMAGE_TYPES)
    assert "application/pdf" in ui.upload_types(model("file_input"))
    assert "image/png" not in ui.upload_types(model("file_input"))


def test_attachments_become_input_parts_beside_the_text() -> None:
    image = ui.attachment_part("chart.png", "image/png", b"\x89PNG")
    document = ui.attachment_part("brief.pdf", "application/pdf", b"%PDF")
    assert image == {"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="}
    assert document == {
        "type": "input_file",
        "filename": "brief.pdf",
        "file_data": "data:application/pdf;base64,JVBERg==",
    }
    assert ui.user_content("What is this?", []) == "What is this?"
    assert ui.user_content("What is this?", [image]) == [
        {"type": "input_text", "text": "What is this?"},
        image,
    ]
    # A message with only files has no empty text part.
    assert ui.user_content("", [document]) == [document]
