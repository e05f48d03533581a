"""Pure helpers for the Chainlit app: catalog metadata, settings and Responses output.

Nothing here imports Chainlit or the OpenAI SDK, so the rules that decide what the UI shows
(which widgets, which settings are sent, how a review is read) are unit-tested in plain Python.
Everything works on plain dicts, the JSON the server sends (`model_dump()` of SDK objects).
"""

from __future__ import annotations

import base64
import json
import re
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
    # The graph is meant for long work: its chats start with "Run in background" on.
    background_by_default: bool = False

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
        background_by_default="background" in features and bool(meta.get("background_by_default")),
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


# What the paperclip offers for a graph that declares image_input / file_input: the types LGOS
# passes on (the union is the `accept` list of .chainlit/config.toml, which Chainlit checks).
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
FILE_TYPES = ("application/pdf", "text/plain", "text/markdown", "text/csv", "application/json")


def upload_types(model: ModelInfo) -> list[str]:
    """The MIME types a user may attach in a chat with `model` (none: no paperclip)."""
    types: list[str] = []
    if "image_input" in model.features:
        types.extend(IMAGE_TYPES)
    if "file_input" in model.features:
        types.extend(FILE_TYPES)
    return types


def attachment_part(name: str, mime: str, data: bytes) -> dict[str, Any]:
    """One attached file as a Responses input part: images as `input_image`, anything else
    as `input_file` with its name, both inline as base64 data URLs (LGOS fetches nothing)."""
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    if mime.startswith("image/"):
        return {"type": "input_image", "image_url": url}
    return {"type": "input_file", "filename": name, "file_data": url}


def user_content(text: str, parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A user message's content: plain text, or the text and the attachments as parts."""
    if not parts:
        return text
    return ([{"type": "input_text", "text": text}] if text else []) + parts


@dataclass
class SettingSpec:
    """A setting the UI can render, derived from one JSON-schema property."""

    key: str
    kind: str  # "switch" | "select" | "text" | "slider" | "number"
    label: str
    default: Any
    description: str | None = None
    choices: list[str] = field(default_factory=list)
    minimum: int | None = None
    maximum: int | None = None


def setting_specs(client_settings: dict[str, Any] | None) -> list[SettingSpec]:
    """Map `lgos.client_settings` to widgets; properties outside the small subset are skipped.

    boolean → switch, string enum → select, string → text, integer with minimum and maximum a
    slider's width apart at most → slider, any other integer or number → number box (with its
    range in the description when it has one). The `defaults` object is authoritative; schema
    `default` keywords are only a fallback.
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
        elif kind == "integer" and _fits_a_slider(prop):
            lo, hi = int(prop["minimum"]), int(prop["maximum"])
            initial = int(default) if default is not None else lo
            common["description"] = _with_range(common["description"], lo, hi)
            specs.append(
                SettingSpec(kind="slider", default=initial, minimum=lo, maximum=hi, **common)
            )
        elif kind in ("integer", "number"):
            lo, hi = prop.get("minimum"), prop.get("maximum")
            common["description"] = _with_range(common["description"], lo, hi)
            specs.append(
                SettingSpec(
                    kind="number" if kind == "number" else "integer",
                    default=default if default is not None else 0,
                    minimum=lo,
                    maximum=hi,
                    **common,
                )
            )
    return specs


# A slider wider than this many steps cannot land on one value by hand: a number box can.
MAX_SLIDER_STEPS = 1000


def _fits_a_slider(prop: dict[str, Any]) -> bool:
    lo, hi = prop.get("minimum"), prop.get("maximum")
    return isinstance(lo, int) and isinstance(hi, int) and 0 < hi - lo <= MAX_SLIDER_STEPS


def _with_range(description: Any, lo: Any, hi: Any) -> str:
    """The description with the allowed range, so the limits are visible before a mistake."""
    if lo is not None and hi is not None:
        bounds = f"Allowed: {lo} to {hi}."
    elif lo is not None:
        bounds = f"Allowed: {lo} or more."
    elif hi is not None:
        bounds = f"Allowed: up to {hi}."
    else:
        bounds = "Any whole number." if description is None else ""
    return " ".join(part for part in (str(description or ""), bounds) if part)


def setting_problem(spec: SettingSpec, value: Any) -> str | None:
    """Why a value typed into a setting cannot be sent (None when it is fine)."""
    if spec.kind not in ("integer", "number", "slider") or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    whole = spec.kind != "number"
    if number != number or (whole and number != int(number)):
        kind = "a whole number" if whole else "a number"
        return f"{spec.label} must be {kind}; '{value}' is not."
    if (spec.minimum is not None and number < spec.minimum) or (
        spec.maximum is not None and number > spec.maximum
    ):
        return f"{spec.label} cannot be {number:g}. {_with_range(None, spec.minimum, spec.maximum)}"
    return None


def coerce(spec: SettingSpec, value: Any) -> Any:
    """Bring a widget value back to the schema's type (sliders report floats)."""
    if value is None:
        return spec.default
    if spec.kind in ("slider", "integer"):
        return round(float(value))
    if spec.kind == "number":
        return float(value)
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
    number: int | None = None  # the `[n]` marker the claim carries in the answer, if any


# A citation marker in the answer text: "[3]", not a markdown link "[3](…)" nor "[text]".
MARKER = re.compile(r"\[(\d{1,3})\](?!\()")


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
            body = part.get("text") or ""
            text.append(body)
            for ann in part.get("annotations") or []:
                if ann.get("type") == "url_citation" and ann.get("url"):
                    citations.append(
                        Citation(
                            title=ann.get("title") or ann["url"],
                            url=ann["url"],
                            number=_marker_after(body, ann.get("end_index")),
                        )
                    )
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


def is_refusal(response: dict[str, Any]) -> bool:
    """A Response that answered a review and failed before saying anything: the graph
    refused the answer (a background answer is checked in its run, so it fails with it)."""
    return (
        response.get("status") == "failed" and not split_output(response.get("output") or []).answer
    )


def _marker_after(text: str, end: Any) -> int | None:
    """The number of the `[n]` marker right after a cited claim (the claim ends at `end`)."""
    if not isinstance(end, int):
        return None
    found = re.match(r"[ \t,]*\[(\d{1,3})\]", text[end:])
    return int(found.group(1)) if found else None


def link_markers(answer: str, citations: list[Citation]) -> str:
    """Every `[n]` marker of the answer as a link to the document the citation names for it.

    The number comes from the marker that follows each cited claim, so chip n always opens
    document n, whatever order the annotations came in. Markers no citation names stay text.
    """
    urls = {c.number: c.url for c in citations if c.number is not None}
    if not urls:
        return answer

    def link(match: re.Match[str]) -> str:
        url = urls.get(int(match.group(1)))
        return f"[\\[{match.group(1)}\\]]({url})" if url else match.group(0)

    return MARKER.sub(link, answer)


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
    details: str  # what the graph prepared for the review (the report, the plan), as text
    # A graph may let the reviewer make one choice standing for the chat: `kind` names the
    # kind of question, `always` the choice ("always approve publishing").
    kind: str | None = None
    always: str | None = None


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
    shown = {
        "question",
        "message",
        "choices",
        "options",
        "allow_other",
        "allow_free_text",
        "kind",
        "always",
    }
    details = "\n\n".join(
        v if isinstance(v, str) else json.dumps(v, indent=2)
        for k, v in value.items()
        if k not in shown
    )
    kind = value.get("kind") if isinstance(value.get("kind"), str) else None
    always = value.get("always") if value.get("always") in buttons else None
    return ReviewQuestion(
        call["call_id"],
        question,
        buttons,
        free_text,
        details,
        kind=kind,
        always=always if kind else None,
    )


def card_props(
    response_id: str,
    review: ReviewQuestion,
    *,
    state: str = "pending",
    decision: str | None = None,
    answered_at: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """What public/elements/ReviewCard.jsx shows: pending, sending or answered."""
    return {
        "response_id": response_id,
        "call_id": review.call_id,
        "question": review.question,
        "content": review.details,
        "choices": review.choices,
        "free_text": review.free_text,
        "state": state,
        "decision": decision,
        "answered_at": answered_at,
        "error": error,
        # "Always approve" for this kind of question, in this chat, when the graph offers it.
        "always": review.always,
        "always_label": f"Always {review.always} ({review.kind}) in this chat"
        if review.always
        else None,
    }


def clip(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# After this long in the queue the status line says that no worker has taken the run.
QUEUED_WARNING_SECONDS = 3


def status_line(
    status: str,
    elapsed: float,
    *,
    paused: bool = False,
    step: str | None = None,
    worker_start: str = "",
) -> str:
    """The visible state of a background run: status, time since it was created, step; when
    no worker takes it, the command that starts one."""
    seconds = max(0, int(elapsed))
    if status == "queued":
        line = f"Background run: **Queued** ({seconds} s)"
        if seconds >= QUEUED_WARNING_SECONDS:
            line += f" · no worker has taken this run for {seconds} s"
            if worker_start:
                line += f": start one with `{worker_start}`"
        return line
    if status == "in_progress":
        return f"Background run: **In progress** ({seconds} s)" + (f" · {step}" if step else "")
    if status == "completed" and paused:
        return "Background run: **Waiting for your review**"
    labels = {
        "completed": "Completed",
        "failed": "Failed",
        "cancelled": "Cancelled",
        "incomplete": "Incomplete",
    }
    return f"Background run: **{labels.get(status, status)}** after {seconds} s"


# A gateway's wrapping of an upstream error: "litellm.BadRequestError: OpenAIException -
# {json}", possibly followed by more of the gateway's own text.
WRAPPED_ERROR = "Exception - {"


def readable_error(message: str, body: Any) -> str:
    """The server's own message: LGOS's, even when a gateway wrapped it in its own text."""
    error = body.get("error", body) if isinstance(body, dict) else None
    text = str(error.get("message") or message) if isinstance(error, dict) else str(message)
    for _ in range(3):  # gateways may wrap more than once
        start = text.find(WRAPPED_ERROR)
        if start < 0:
            break
        try:
            inner, _end = json.JSONDecoder().raw_decode(text, start + len(WRAPPED_ERROR) - 1)
        except ValueError:
            break
        inner_error = inner.get("error", inner) if isinstance(inner, dict) else None
        if not isinstance(inner_error, dict) or not inner_error.get("message"):
            break
        text = str(inner_error["message"])
    return text
