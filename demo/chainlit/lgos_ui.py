"""Pure helpers for the Chainlit app: catalog metadata, settings and Responses output.

Nothing here imports Chainlit or the OpenAI SDK, so the rules that decide what the UI shows
(which widgets, which settings are sent, how a review is read) are unit-tested in plain Python.
Everything works on plain dicts, the JSON the server sends (`model_dump()` of SDK objects).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

INTERRUPT_TOOL = "lgos_interrupt"
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "incomplete"})
# Client-owned switches live in the same settings panel as the graph's settings; their ids
# start with `lgos_ui_` so they can never collide with a graph setting (`lgos_` is reserved).
STREAM_SWITCH = "lgos_ui_stream"
BACKGROUND_SWITCH = "lgos_ui_background"
# Choices that mean "let me type an answer" rather than a fixed decision.
FREE_TEXT_CHOICES = frozenset({"feedback", "edit", "revise", "respond", "comment"})


@dataclass
class ModelInfo:
    """What the UI needs to know about one model of the catalog."""

    id: str
    description: str = ""
    features: list[str] = field(default_factory=list)
    # False when the catalog entry has no `lgos` object (a plain OpenAI model behind a gateway).
    has_lgos: bool = False

    @property
    def supports_background(self) -> bool:
        return "background" in self.features


def parse_model(entry: dict[str, Any]) -> ModelInfo:
    """Read one `/v1/models` entry; tolerate a missing or malformed `lgos` object."""
    meta = entry.get("lgos")
    if not isinstance(meta, dict):
        return ModelInfo(id=entry["id"])
    features = [str(f) for f in meta.get("features") or []]
    return ModelInfo(
        id=entry["id"],
        description=str(meta.get("description") or ""),
        features=features,
        has_lgos=True,
    )


def profile_description(model: ModelInfo) -> str:
    """Markdown shown under a chat profile."""
    if not model.has_lgos:
        return (
            "**Limited functionality**: this model does not advertise LGOS metadata, so it has "
            "no settings, no background runs and no review."
        )
    text = model.description or model.id
    if model.features:
        text += "\n\nFeatures: " + ", ".join(model.features)
    return text


@dataclass
class SettingSpec:
    """A setting the UI can render, derived from one JSON-schema property."""

    key: str
    kind: str  # "switch" | "select" | "text" | "slider"
    label: str
    default: Any
    description: str | None = None
    choices: list[str] = field(default_factory=list)
    minimum: int | None = None
    maximum: int | None = None


def setting_specs(client_settings: dict[str, Any] | None) -> list[SettingSpec]:
    """Map `lgos.client_settings` to widgets; properties outside the small subset are skipped.

    boolean → switch, string enum → select, string → text, integer with minimum and maximum →
    slider. The `defaults` object is authoritative; schema `default` keywords are only a fallback.
    """
    if not client_settings:
        return []
    schema = client_settings.get("json_schema") or {}
    defaults = client_settings.get("defaults") or {}
    specs = []
    for key, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict) or key.startswith("lgos_"):
            continue
        default = defaults.get(key, prop.get("default"))
        label = str(prop.get("title") or key.replace("_", " ").capitalize())
        common = {"key": key, "label": label, "description": prop.get("description")}
        kind = prop.get("type")
        if kind == "boolean":
            specs.append(SettingSpec(kind="switch", default=bool(default), **common))
        elif kind == "string" and isinstance(prop.get("enum"), list):
            choices = [str(c) for c in prop["enum"]]
            initial = str(default) if default in choices else choices[0]
            specs.append(SettingSpec(kind="select", default=initial, choices=choices, **common))
        elif kind == "string":
            specs.append(SettingSpec(kind="text", default=default or "", **common))
        elif kind == "integer" and "minimum" in prop and "maximum" in prop:
            lo, hi = int(prop["minimum"]), int(prop["maximum"])
            initial = int(default) if default is not None else lo
            specs.append(
                SettingSpec(kind="slider", default=initial, minimum=lo, maximum=hi, **common)
            )
    return specs


def coerce(spec: SettingSpec, value: Any) -> Any:
    """Bring a widget value back to the schema's type (sliders report floats)."""
    if value is None:
        return spec.default
    if spec.kind == "slider":
        return round(float(value))
    if spec.kind == "switch":
        return bool(value)
    return str(value)


def changed_settings(specs: list[SettingSpec], values: dict[str, Any]) -> dict[str, Any]:
    """Only the values that differ from the graph's defaults (the contract sends nothing else)."""
    changed = {}
    for spec in specs:
        if spec.key in values:
            value = coerce(spec, values[spec.key])
            if value != spec.default:
                changed[spec.key] = value
    return changed


def request_metadata(changed: dict[str, Any], conversation_id: str | None) -> dict[str, str]:
    """`metadata` for a request: the settings as a JSON object string, and the conversation."""
    metadata = {}
    if changed:
        metadata["lgos_settings"] = json.dumps(changed, separators=(",", ":"), sort_keys=True)
    if conversation_id:
        metadata["conversation_id"] = conversation_id
    return metadata


@dataclass
class Citation:
    title: str
    url: str


@dataclass
class RenderedOutput:
    """A Responses `output` list, split the way the UI shows it."""

    answer: str = ""
    commentary: list[str] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)  # lgos_interrupt calls
    refusal: str = ""


def message_text(item: dict[str, Any]) -> tuple[str, list[Citation], str]:
    """Text, url citations and refusal of one assistant message item."""
    text, citations, refusal = [], [], []
    for part in item.get("content") or []:
        if part.get("type") == "output_text":
            text.append(part.get("text") or "")
            for ann in part.get("annotations") or []:
                if ann.get("type") == "url_citation" and ann.get("url"):
                    citations.append(Citation(title=ann.get("title") or ann["url"], url=ann["url"]))
        elif part.get("type") == "refusal":
            refusal.append(part.get("refusal") or "")
    return "".join(text), citations, "".join(refusal)


def is_commentary(item: dict[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("phase") == "commentary"


def split_output(output: list[dict[str, Any]]) -> RenderedOutput:
    """Commentary apart from the answer, citations deduplicated, review calls collected."""
    result = RenderedOutput()
    answers = []
    seen = set()
    for item in output:
        kind = item.get("type")
        if kind == "message":
            text, citations, refusal = message_text(item)
            if is_commentary(item):
                if text:
                    result.commentary.append(text)
                continue
            answers.append(text)
            result.refusal += refusal
            for citation in citations:
                if citation.url not in seen:
                    seen.add(citation.url)
                    result.citations.append(citation)
        elif kind == "function_call" and item.get("name") == INTERRUPT_TOOL:
            result.reviews.append(item)
    result.answer = "\n\n".join(a for a in answers if a)
    return result


def sources_markdown(citations: list[Citation], answer: str = "") -> str:
    """A numbered list of the cited pages, unless the answer already links every one of them."""
    if not citations or all(c.url in answer for c in citations):
        return ""
    lines = [f"{i}. [{c.title}]({c.url})" for i, c in enumerate(citations, 1)]
    return "**Sources**\n" + "\n".join(lines)


@dataclass
class ReviewQuestion:
    """One `lgos_interrupt` call as the reviewer sees it."""

    call_id: str
    question: str
    choices: list[str]
    free_text: bool
    details: str  # the rest of the payload (e.g. the report under review)


def parse_review(call: dict[str, Any]) -> ReviewQuestion:
    """Read an interrupt's arguments; any JSON value is accepted, dicts get the nice layout."""
    raw = call.get("arguments") or ""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    if not isinstance(value, dict):
        text = value if isinstance(value, str) else json.dumps(value, indent=2)
        # No declared choices: offer approve / reject and accept typed answers too.
        return ReviewQuestion(call["call_id"], text, ["approve", "reject"], True, "")
    question = str(value.get("question") or value.get("message") or "Review requested")
    declared = value.get("choices") or value.get("options")
    choices = [str(c) for c in declared] if isinstance(declared, list) else []
    free_choices = [c for c in choices if c.lower() in FREE_TEXT_CHOICES]
    buttons = [c for c in choices if c not in free_choices]
    # `allow_other: true` (or a "feedback"-like choice) means a typed answer is accepted too.
    free_text = (
        bool(free_choices)
        or not choices
        or bool(value.get("allow_other"))
        or bool(value.get("allow_free_text"))
    )
    if not buttons:
        buttons = ["approve", "reject"]
    rest = {
        k: v for k, v in value.items() if k not in {"question", "message", "choices", "options"}
    }
    details = "\n\n".join(
        f"**{k.replace('_', ' ').capitalize()}**\n\n{v if isinstance(v, str) else json.dumps(v)}"
        for k, v in rest.items()
        if k not in {"allow_other", "allow_free_text"}
    )
    return ReviewQuestion(call["call_id"], question, buttons, free_text, details)


def review_markdown(review: ReviewQuestion) -> str:
    text = f"**Review needed**: {review.question}"
    if review.details:
        text += "\n\n" + review.details
    if review.free_text:
        text += "\n\n_Choose a button, or type your feedback in the chat box._"
    return text


def status_line(status: str, elapsed: float) -> str:
    """The visible state of a background run while it is polled."""
    labels = {
        "queued": "Queued",
        "in_progress": "In progress",
        "completed": "Completed",
        "failed": "Failed",
        "cancelled": "Cancelled",
        "incomplete": "Incomplete",
    }
    label = labels.get(status, status)
    if status in TERMINAL_STATUSES:
        return f"Background run: **{label}**"
    return f"Background run: **{label}** ({max(0, int(elapsed))} s)"
