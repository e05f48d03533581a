"""
title: LGOS graphs
description: Chat with LangGraph graphs served by LGOS, over the OpenAI Responses API.
version: 0.1.0
license: MIT
"""

# This file is an Open WebUI *Function* (a manifold Pipe). It runs inside Open WebUI, never
# inside LGOS: it only speaks the OpenAI Responses wire format to an LGOS server (or to a
# gateway such as LiteLLM in front of it), so it depends only on what Open WebUI ships
# (httpx, pydantic). demo/openwebui/sync.py installs it through Open WebUI's HTTP API.

import asyncio
import base64
import json
import logging
import mimetypes
import os
import re
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, Field

log = logging.getLogger("lgos_pipe")

# Statuses after which a Response no longer changes, and the stream events that end one.
TERMINAL = {"completed", "failed", "cancelled", "incomplete"}
TERMINAL_EVENTS = {"response.completed", "response.failed", "response.incomplete"}
# How long Open WebUI keeps a review card open by default (it allows 60 s to 240 s); after
# that the review stays pending on the server, and Answer now or a reply in the chat answers it.
REVIEW_CARD_TIMEOUT_SECONDS = 240
# After this long in the queue the status line says that no worker has taken the run.
QUEUED_WARNING_SECONDS = 3
# The function call name LGOS uses for a question the graph paused on.
INTERRUPT = "lgos_interrupt"
# The lines around a graph's settings in its workspace model's system prompt (sync.py writes
# them, with the same markers): Open WebUI offers them as the chat's variables and sends the
# rendered prompt as a system message, which is the Pipe's to read, not the graph's.
SETTINGS_BEGIN = "[LGOS settings of this chat: read by the LGOS Pipe, never sent to the graph]"
SETTINGS_END = "[end of LGOS settings]"
_SETTINGS_LINES = re.compile(re.escape(SETTINGS_BEGIN) + r".*?" + re.escape(SETTINGS_END), re.S)

Emitter = Callable[[dict[str, Any]], Awaitable[Any]]


class LgosError(Exception):
    """An error envelope returned by LGOS (or the gateway), kept readable for the chat."""

    def __init__(self, message: str, status: int | None = None, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.param = param

    @classmethod
    def from_response(cls, response: httpx.Response) -> "LgosError":
        message, param = _error_message(response)
        return cls(message, response.status_code, param)

    @property
    def upstream_unreachable(self) -> bool:
        """Whether a gateway answered that it could not connect to the server behind it (its
        own 5xx, worded by its HTTP client: LiteLLM says "Cannot connect to host ...")."""
        said = str(self).lower()
        return (self.status or 0) >= 500 and any(words in said for words in _NOT_CONNECTED)


# How a gateway's HTTP client words "the server behind me does not answer" (aiohttp, httpx,
# the OpenAI SDK that LiteLLM uses).
_NOT_CONNECTED = (
    "cannot connect to host",
    "connect call failed",
    "connection refused",
    "apiconnectionerror",
    "connection error",
)


def _content_text(content: Any) -> str:
    """Plain text of an Open WebUI chat message content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _user_parts(content: Any, files: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A user message as Responses content: its text, its images (Open WebUI puts them in
    the message as `image_url` parts, inline as data URLs) and the files attached to it."""
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and part.get("text"):
            parts.append({"type": "input_text", "text": part["text"]})
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if url:
                detail = image.get("detail") if isinstance(image, dict) else None
                parts.append(
                    {
                        "type": "input_image",
                        "image_url": url,
                        **({"detail": detail} if detail else {}),
                    }
                )
    parts.extend(files)
    if all(part["type"] == "input_text" for part in parts):
        return "".join(part["text"] for part in parts)  # text only: as before, a plain string
    return parts


def to_input(
    messages: list[dict[str, Any]], attachments: list[list[dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """Turn Open WebUI's chat history into Responses input messages.

    `attachments[n]` holds the `input_file` parts of the n-th user message (see
    `attached_files`); images come inside the messages themselves. The settings lines of a
    system message are left out (a system message that was only those, entirely).
    """
    attachments = attachments or []
    items = []
    turn = 0
    for message in messages:
        role = message.get("role")
        if role == "user":
            files = attachments[turn] if turn < len(attachments) else []
            turn += 1
            items.append({"role": role, "content": _user_parts(message.get("content"), files)})
        elif role in ("assistant", "developer"):
            items.append({"role": role, "content": _content_text(message.get("content"))})
        elif role == "system":
            text = _SETTINGS_LINES.sub("", _content_text(message.get("content"))).strip()
            if text:
                items.append({"role": role, "content": text})
    return items


def _is_document(item: dict[str, Any]) -> bool:
    """An uploaded file that is not an image (Open WebUI sends images in the messages)."""
    kind = str(
        item.get("content_type")
        or (item.get("file") or {}).get("meta", {}).get("content_type")
        or ""
    )
    return item.get("type") == "file" and bool(item.get("id")) and not kind.startswith("image/")


async def attached_files(metadata: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The documents attached to each user message of this chat, up to the current one, as
    `input_file` parts (the file itself, base64), oldest message first.

    Open WebUI keeps which file belongs to which message in its chat store; the messages it
    hands a Pipe no longer say. A PDF goes to the graph as the PDF, not as the text Open WebUI
    would extract from it (sync.py turns that extraction off for these models).
    """
    try:
        from open_webui.models.chats import Chats  # type: ignore[import-not-found]
    except ImportError:  # outside Open WebUI
        return []
    chat_id = str(metadata.get("chat_id") or "")
    message_id = metadata.get("user_message_id")
    chain: list[dict[str, Any]] = []
    messages = await Chats.get_messages_map_by_chat_id(chat_id) if chat_id and message_id else None
    while messages and message_id in messages and len(chain) <= len(messages):
        chain.insert(0, messages[message_id])
        message_id = messages[message_id].get("parentId")
    if not chain and metadata.get("user_message"):
        chain = [metadata["user_message"]]  # a temporary chat: only this message is known
    user_id = str(metadata.get("user_id") or "")
    turns = []
    for message in chain:
        if message.get("role") == "user":
            items = [item for item in message.get("files") or [] if _is_document(item)]
            turns.append([await _file_part(item, user_id) for item in items])
    return turns


async def _file_part(item: dict[str, Any], user_id: str) -> dict[str, Any]:
    """One uploaded file, read from Open WebUI's storage, as an `input_file` part."""
    from open_webui.models.files import Files  # type: ignore[import-not-found]
    from open_webui.storage.provider import Storage  # type: ignore[import-not-found]

    name = str(item.get("name") or "file")
    record = await Files.get_file_by_id_and_user_id(str(item["id"]), user_id)
    if record is None or not record.path:
        raise LgosError(f"The attached file '{name}' is no longer in Open WebUI.")
    try:
        path = await asyncio.to_thread(Storage.get_file, record.path)
        data = await asyncio.to_thread(Path(path).read_bytes)
    except OSError as exc:
        raise LgosError(f"The attached file '{name}' cannot be read: {exc}") from exc
    meta = record.meta or {}
    mime = str(
        meta.get("content_type") or mimetypes.guess_type(name)[0] or "application/octet-stream"
    )
    encoded = base64.b64encode(data).decode()
    return {
        "type": "input_file",
        "filename": str(meta.get("name") or name),
        "file_data": f"data:{mime};base64,{encoded}",
    }


def answer_texts(response: dict[str, Any]) -> list[str]:
    """Texts of the answer messages (commentary messages are progress, not the answer)."""
    texts = []
    for item in response.get("output") or []:
        if item.get("type") == "message" and item.get("phase") != "commentary":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    texts.append(part.get("text", ""))
    return texts


def interrupt_calls(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The review questions a completed Response paused on (empty when it finished)."""
    return [
        item
        for item in response.get("output") or []
        if item.get("type") == "function_call" and item.get("name") == INTERRUPT
    ]


def changed_settings(
    values: dict[str, Any], client_settings: dict[str, Any] | None
) -> dict[str, Any]:
    """The settings the user set to something other than the graph's default.

    `values` are the chat's variables (sync.py declares one per setting of the graph). LGOS
    wants only the changed ones in ``metadata.lgos_settings``; a value the selected graph does
    not declare is left out (a chat may switch to another graph's model).
    """
    if not client_settings:
        return {}
    properties = (client_settings.get("json_schema") or {}).get("properties") or {}
    defaults = client_settings.get("defaults") or {}
    changed = {}
    for key, value in values.items():
        if key not in properties or value is None or value == "":
            continue
        value = as_setting(key, value, properties[key])
        if value != defaults.get(key):
            changed[key] = value
    return changed


class SettingError(ValueError):
    """A setting whose value cannot be what its schema says: named, with what it must be."""


# How a switch is written in the chat's settings (a select of on and off), and by JSON.
SWITCH = {"on": True, "off": False, "true": True, "false": False}


def as_switch(key: str, value: Any, title: str = "") -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in SWITCH:
        return SWITCH[str(value).strip().lower()]
    raise SettingError(f"{title or key} is '{value}', not on or off.")


def as_setting(key: str, value: Any, schema: dict[str, Any]) -> Any:
    """A chat variable's value (the form keeps text and numbers) as the value the graph takes."""
    kind = schema.get("type")
    title = schema.get("title") or key.replace("_", " ").title()
    if kind == "boolean":
        return as_switch(key, value, title)
    if schema.get("enum"):
        # A select's value is text; an enum of numbers takes the number it names.
        return next((item for item in schema["enum"] if str(item) == str(value)), value)
    if kind not in ("integer", "number") or isinstance(value, bool):
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        number = float("nan")
    whole = kind == "integer"
    if number != number or (whole and number != int(number)):
        what = "a whole number" if whole else "a number"
        raise SettingError(f"{title} is '{value}', not {what}.")
    return int(number) if whole else number


async def gateway_catalog(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    """The `lgos` metadata of each model as the LiteLLM gateway keeps it, by model name.

    LiteLLM's /v1/models drops fields it does not know, so the gateway's configuration copies
    each model's metadata into `model_info.lgos`, which LiteLLM serves on /model/info. Other
    servers have no such route: no metadata.
    """
    try:
        response = await client.get("/model/info")
        entries = response.json()["data"] if response.status_code == 200 else []
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return {}
    return {
        entry["model_name"]: entry["model_info"]["lgos"]
        for entry in entries
        if isinstance(entry, dict) and (entry.get("model_info") or {}).get("lgos") is not None
    }


# A gateway's wrapping of an upstream error: "litellm.BadRequestError: OpenAIException -
# {json}", possibly followed by more of the gateway's own text.
_WRAPPED = "Exception - {"


def _unwrap(error: dict[str, Any]) -> dict[str, Any]:
    """The innermost error object a gateway wrapped in its message (LGOS's own)."""
    for _ in range(3):  # gateways may wrap more than once
        message = str(error.get("message") or "")
        start = message.find(_WRAPPED)
        if start < 0:
            break
        try:
            inner, _end = json.JSONDecoder().raw_decode(message, start + len(_WRAPPED) - 1)
        except ValueError:
            break
        inner = inner.get("error", inner) if isinstance(inner, dict) else None
        if not isinstance(inner, dict) or not inner.get("message"):
            break
        error = inner
    return error


def _error_message(response: httpx.Response) -> tuple[str, str | None]:
    """LGOS's own message and `param`, also when a gateway wrapped them in its text."""
    try:
        error = _unwrap(response.json()["error"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"HTTP {response.status_code}: {response.text[:500]}", None
    return str(error.get("message") or f"HTTP {response.status_code}"), error.get("param")


def allowed_values(client_settings: dict[str, Any] | None) -> dict[str, str]:
    """Each setting's allowed values in words, from the graph's JSON schema."""
    properties = ((client_settings or {}).get("json_schema") or {}).get("properties") or {}
    allowed = {}
    for key, prop in properties.items():
        if prop.get("enum"):
            allowed[key] = "one of " + ", ".join(map(str, prop["enum"]))
        elif "minimum" in prop and "maximum" in prop:
            allowed[key] = f"{prop['minimum']} to {prop['maximum']}"
        elif "minimum" in prop:
            allowed[key] = f"{prop['minimum']} or more"
        elif "maximum" in prop:
            allowed[key] = f"up to {prop['maximum']}"
    return allowed


def _is_commentary(item: dict[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("phase") == "commentary"


def _now() -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime())


def progress_line(state: str, step: str = "", waited: float = 0, worker_start: str = "") -> str:
    """What a background run is doing. A state, not a clock: Open WebUI keeps every status
    line in the message's history, so a line only changes when the run's state does."""
    if state == "queued":
        if waited < QUEUED_WARNING_SECONDS:
            return "Queued"
        fix = f" Start one with `{worker_start}`." if worker_start else ""
        return f"Queued for {int(waited)} s: no worker has taken this run.{fix}"
    return "Running" + (f" · {step}" if step else "")


_MARKER_AFTER = re.compile(r"[ \t,]*\[(\d{1,3})\]")


def numbered_sources(response: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    """(n, title, url, cited text) of the passages the answer cites, in the order of their
    numbers.

    The number of a citation is that of the `[n]` marker right after its claim; citations
    without a marker follow, numbered after the others. The URL is the one the graph gave (the
    demo's opens the document at the cited passage); the cited text is the claim.
    """
    by_number: dict[int, tuple[str, str, str]] = {}
    unnumbered: list[tuple[str, str, str]] = []
    for item in response.get("output") or []:
        if item.get("type") != "message" or _is_commentary(item):
            continue
        for part in item.get("content") or []:
            text = part.get("text") or ""
            for note in part.get("annotations") or []:
                if note.get("type") != "url_citation" or not note.get("url"):
                    continue
                start, end = note.get("start_index"), note.get("end_index")
                cited = text[start:end] if isinstance(start, int) and isinstance(end, int) else ""
                entry = (note.get("title") or note["url"], note["url"], cited)
                found = _MARKER_AFTER.match(text, end) if isinstance(end, int) else None
                if found:
                    by_number.setdefault(int(found.group(1)), entry)
                elif entry[1] not in {e[1] for e in unnumbered}:
                    unnumbered.append(entry)
    ordered = [(n, *by_number[n]) for n in sorted(by_number)]
    urls = {url for _, _, url, _ in ordered}
    extra = [entry for entry in unnumbered if entry[1] not in urls]
    start = len(ordered) + 1
    return ordered + [(start + i, *entry) for i, entry in enumerate(extra)]


class ReviewQuestion:
    """One `lgos_interrupt` call, read for the question card."""

    def __init__(self, call_id: str, args: dict[str, Any]) -> None:
        self.call_id = call_id
        self.question = str(args.get("question") or "The graph asks for your review.")
        self.choices = [str(choice) for choice in args.get("choices") or []] or [
            "approve",
            "reject",
        ]
        # The graph also takes free text (feedback) besides its choices.
        self.allow_other = bool(args.get("allow_other")) or not args.get("choices")
        # A graph may let the reviewer make one choice standing for the chat: `kind` names the
        # kind of question, `always` the choice ("always approve publishing").
        kind, always = args.get("kind"), args.get("always")
        self.kind = kind if isinstance(kind, str) and always in self.choices else ""
        self.always = str(always) if self.kind else ""
        # Everything else the graph sent (the draft report, the plan) is what is reviewed.
        self.details = "\n\n".join(
            value if isinstance(value, str) else json.dumps(value, indent=2)
            for key, value in args.items()
            if key not in ("question", "choices", "allow_other", "kind", "always")
        )

    @property
    def always_label(self) -> str:
        return f"Always {self.always} ({self.kind}) in this chat" if self.always else ""

    @classmethod
    def parse(cls, call: dict[str, Any]) -> "ReviewQuestion":
        try:
            args = json.loads(call.get("arguments") or "{}")
        except ValueError:
            args = {"question": call.get("arguments")}
        if not isinstance(args, dict):
            args = {"question": str(args)}
        return cls(str(call["call_id"]), args)

    def card(self) -> dict[str, Any]:
        descriptions = {
            "approve": "Accept what is shown above",
            "reject": "Decline what is shown above",
        }
        return {
            "id": self.call_id,
            "header": "Review",
            "question": self.question,
            "options": [
                {"label": choice.capitalize(), "description": descriptions.get(choice, choice)}
                for choice in self.choices
            ]
            + (
                [
                    {
                        "label": self.always_label,
                        "description": f"Answer {self.always} to every {self.kind} question "
                        "of this chat without asking",
                    }
                ]
                if self.always
                else []
            ),
            "allow_other": self.allow_other,
        }

    def choice_for(self, label: str) -> str:
        for choice in self.choices:
            if choice.capitalize() == label:
                return choice
        return label  # the "always" option's label, or a label Open WebUI sent as it was


class Review:
    """A Response that paused on review questions, until they are answered.

    `message_id` is the chat message that shows the review, `function_id` the Pipe that runs
    its model, and `model` the LGOS model: what "Answer now" needs to resume it.
    """

    def __init__(
        self,
        response_id: str,
        calls: list[dict[str, Any]],
        *,
        message_id: str = "",
        function_id: str = "",
        model: str = "",
    ) -> None:
        self.response_id = response_id
        self.calls = calls
        self.message_id = message_id
        self.function_id = function_id
        self.model = model
        self.questions = [ReviewQuestion.parse(call) for call in calls]

    def card_markdown(self) -> str:
        """What the review is about, in the answer itself. The question is the card's: it is
        written here only once the card is gone (see `waiting_note`)."""
        parts = []
        for question in self.questions:
            if question.details:
                quoted = "\n".join(f"> {line}" for line in question.details.splitlines())
                parts.append(f"\n\n---\n\n#### For your review\n\n{quoted}")
        return "".join(parts) + "\n" if parts else ""

    def waiting_note(self) -> str:
        """The review left waiting: its question, and the two ways to answer it."""
        question = self.questions[0]
        return (
            f"\n\n> **Waiting for your review:** {question.question}\n>\n"
            "> Press **Answer now** under this message, or type your answer "
            f"({self.reply_hint()}) and send it: it answers this review, it starts nothing new.\n"
        )

    def reply_hint(self) -> str:
        question = self.questions[0]
        options = " or ".join(f"**{choice}**" for choice in question.choices)
        return options + (", or your own words" if question.allow_other else "")

    def answer_request(self, base: dict[str, Any], *answers: str) -> dict[str, Any]:
        outputs = [
            {"type": "function_call_output", "call_id": call["call_id"], "output": answer}
            for call, answer in zip(self.calls, answers, strict=False)
        ]
        return {**base, "previous_response_id": self.response_id, "input": outputs}

    def as_json(self) -> dict[str, Any]:
        return {
            "response_id": self.response_id,
            "calls": self.calls,
            "message_id": self.message_id,
            "function_id": self.function_id,
            "model": self.model,
        }

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> "Review":
        return cls(
            entry["response_id"],
            entry["calls"],
            message_id=str(entry.get("message_id") or ""),
            function_id=str(entry.get("function_id") or ""),
            model=str(entry.get("model") or ""),
        )


# Tasks that outlive the turn that started them (kept referenced until they end).
_background_tasks: set[asyncio.Task[None]] = set()

# The mark a chat's title carries in the sidebar while a review waits in it: the sidebar's
# search for it lists every chat with a review waiting (Open WebUI's equivalent of an inbox).
WAITING_MARK = "Review waiting · "


async def mark_chat_waiting(chat_id: str, waiting: bool, emit: Emitter | None = None) -> None:
    """Add or remove the waiting mark on the chat's title (Open WebUI's sidebar shows it)."""
    try:
        from open_webui.models.chats import Chats  # type: ignore[import-not-found]
    except ImportError:  # outside Open WebUI
        return
    try:
        title = await Chats.get_chat_title_by_id(chat_id) or ""
        bare = title.removeprefix(WAITING_MARK)
        wanted = WAITING_MARK + bare if waiting else bare
        if wanted != title:
            await Chats.update_chat_title_by_id(chat_id, wanted)
            if emit is not None:
                await emit({"type": "chat:title", "data": wanted})
    except Exception as exc:  # the mark is a convenience: the review itself is saved
        log.warning("could not mark chat %s: %s", chat_id, exc)


async def mark_once_titled(chat_id: str, pending: "PendingReviews", emit: Emitter | None) -> None:
    """After a chat's first turn Open WebUI titles it with the first message, over the mark:
    mark it again once that is done, if the review still waits (a deadline, not a clock)."""
    try:
        from open_webui.models.chats import Chats  # type: ignore[import-not-found]
    except ImportError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)  # waiting for Open WebUI's own title, which sends no event here
        if pending.in_chat(chat_id) is None:
            return
        title = await Chats.get_chat_title_by_id(chat_id) or ""
        if title and not title.startswith(WAITING_MARK) and title != "New Chat":
            await mark_chat_waiting(chat_id, True, emit)
            return


def answered_line(answer: str) -> str:
    return f"\n\n> **Review answered:** {answer} · {_now()}\n\n"


class PendingReviews:
    """The review waiting in each chat, from the moment it is shown until it is answered.

    Kept in a small JSON file in Open WebUI's data folder, so that a Stop, a reload, a restart
    of Open WebUI (or a reload of this function) does not forget it: the run waits on the LGOS
    server either way, and without this the next message would start a new run instead of
    answering. Each entry is keyed by the server too, since a chat may switch to a model on
    another one.
    """

    FILE_NAME = "lgos_pending_reviews.json"

    def __init__(self, folder: Path) -> None:
        self.path = folder / self.FILE_NAME
        self._lock = threading.Lock()

    def pop(self, server: str, chat_id: str) -> Review | None:
        with self._lock:
            entries = self._read()
            entry = entries.pop(f"{server} {chat_id}", None)
            if entry is not None:
                self._write(entries)
        return Review.from_json(entry) if entry else None

    def put(self, server: str, chat_id: str, review: Review) -> None:
        with self._lock:
            entries = self._read()
            entries[f"{server} {chat_id}"] = review.as_json()
            self._write(entries)

    def standing(self, chat_id: str) -> dict[str, str]:
        """The choices made standing in a chat: {kind of question: choice}."""
        with self._lock:
            entry = self._read().get(f"always {chat_id}")
        return dict(entry) if isinstance(entry, dict) else {}

    def stand_by(self, chat_id: str, kind: str, choice: str) -> None:
        with self._lock:
            entries = self._read()
            entries[f"always {chat_id}"] = {
                **(entries.get(f"always {chat_id}") or {}),
                kind: choice,
            }
            self._write(entries)

    def in_chat(self, chat_id: str) -> tuple[str, Review] | None:
        """The review waiting in a chat, on whichever server: (server, review)."""
        with self._lock:
            entries = self._read()
        for key, entry in entries.items():
            server, _, chat = key.rpartition(" ")
            if chat == chat_id and server != "always":
                return server, Review.from_json(entry)
        return None

    def _read(self) -> dict[str, Any]:
        try:
            entries = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except ValueError:
            log.warning("%s is not JSON; starting without waiting reviews", self.path)
            return {}
        return entries if isinstance(entries, dict) else {}

    def _write(self, entries: dict[str, Any]) -> None:
        # Whole or not at all: a crash mid-write must not leave half a file.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(entries))
        os.replace(partial, self.path)


def data_folder() -> Path:
    """Open WebUI's data folder (where its own database lives), else DATA_DIR or a temp dir."""
    try:
        from open_webui.env import DATA_DIR  # type: ignore[import-not-found]

        return Path(DATA_DIR)
    except ImportError:  # outside Open WebUI (the Pipe's unit tests)
        return Path(os.environ.get("DATA_DIR") or tempfile.gettempdir())


class Pipe:
    class Valves(BaseModel):
        """Admin settings, written by sync.py."""

        base_url: str = Field(
            default="http://127.0.0.1:8000/v1",
            description="Base URL of LGOS or of the LiteLLM gateway (ends in /v1).",
        )
        api_key: str = Field(default="", description="API key sent as a Bearer token.")
        model_name_prefix: str = Field(
            default="LGOS: ", description="Shown before each graph name in the model list."
        )
        poll_interval_seconds: float = Field(
            default=1.0, description="How often a background Response is polled."
        )
        timeout_seconds: float = Field(
            default=120.0, description="Timeout of one HTTP call (a stream may last longer)."
        )
        upstream_name: str = Field(
            default="LGOS",
            description="What base_url is, in the chat's outage messages (e.g. the LiteLLM "
            "gateway).",
        )
        upstream_start: str = Field(
            default="", description="The command that starts base_url, named when it is down."
        )
        lgos_start: str = Field(
            default="",
            description="When base_url is a gateway: the command that starts LGOS behind it, "
            "named when the gateway answers that it cannot reach LGOS.",
        )
        worker_start: str = Field(
            default="just demo/worker",
            description="The command that starts a background worker, named when no worker "
            "takes a run.",
        )
        review_card_timeout_seconds: int = Field(
            default=REVIEW_CARD_TIMEOUT_SECONDS,
            description="How long a review card stays open (Open WebUI keeps it 60 to 240 s); "
            "then the review waits, and Answer now under its message opens the card again.",
        )

    # No UserValves: a graph's settings are the chat's variables, which its workspace model
    # declares (sync.py), so that each model shows its own settings and no other graph's.

    def __init__(self) -> None:
        self.type = "manifold"
        self.valves = self.Valves()
        self.pending = PendingReviews(data_folder())

    def _client(self, user: dict[str, Any] | None = None) -> httpx.AsyncClient:
        return lgos_client(self.valves, str((user or {}).get("id") or ""))

    async def pipes(self) -> list[dict[str, str]]:
        """One Open WebUI model per LGOS model; called whenever Open WebUI lists models."""
        try:
            async with self._client() as client:
                response = await client.get("/models")
                response.raise_for_status()
                models = response.json()["data"]
                described = {model["id"] for model in models if "lgos" in model}
                if len(described) < len(models):  # behind LiteLLM: metadata is elsewhere
                    described |= set(await gateway_catalog(client))
        except Exception as exc:  # an unreachable server must not break Open WebUI's model list
            log.warning("LGOS models unavailable at %s: %s", self.valves.base_url, exc)
            return []
        prefix = self.valves.model_name_prefix
        # Models without the `lgos` metadata (e.g. a plain model behind the gateway) still
        # chat, but none of the extras (background, review, settings) are known to work.
        limited = " (limited functionality)"
        return [
            {"id": m["id"], "name": prefix + m["id"] + ("" if m["id"] in described else limited)}
            for m in models
        ]

    async def pipe(
        self,
        body: dict[str, Any],
        __user__: dict[str, Any] | None = None,
        __metadata__: dict[str, Any] | None = None,
        __event_emitter__: Emitter | None = None,
        __event_call__: Callable[[dict[str, Any]], Awaitable[Any]] | None = None,
    ) -> AsyncIterator[str]:
        # Open WebUI names manifold models "<function id>.<LGOS model id>".
        model = body["model"].split(".", 1)[1]
        metadata = __metadata__ or {}
        # The chat's settings (Open WebUI's chat variables, saved with the chat).
        values = dict(metadata.get("chat_variables") or {})
        turn = _Turn(self.valves, model, values, __event_emitter__, __event_call__)
        turn.function_id = body["model"].split(".", 1)[0]
        async with self._client(__user__) as client:
            turn.client = client
            try:
                attachments = await attached_files(metadata)
            except LgosError as exc:
                yield f"**Not sent:** {exc}"
                return
            messages = to_input(body.get("messages") or [], attachments)
            texts = turn.run(messages, metadata, self.pending)
            try:
                async for text in texts:
                    yield text
            finally:
                # When Open WebUI closes this generator (Stop), close the inner one now, while
                # the HTTP client is still open, so that it can cancel its background run.
                await texts.aclose()


# The Action function is this file without `Pipe` (sync.py removes the name): it keeps these.
PipeValves = Pipe.Valves


class Action:
    """ "Answer now": the review card again, for a review left waiting in this chat (after
    Cancel, the card's timeout, a closed tab or a restart of Open WebUI). sync.py installs this
    same file a second time as an Action function (without the Pipe) and shows its button under
    the messages of the graphs that ask for reviews."""

    actions: ClassVar[list[dict[str, str]]] = [{"id": "answer", "name": "Answer now"}]

    class Valves(BaseModel):
        pass

    def __init__(self) -> None:
        self.valves = self.Valves()
        self.pending = PendingReviews(data_folder())

    async def action(
        self,
        body: dict[str, Any],
        __user__: dict[str, Any] | None = None,
        __event_emitter__: Emitter | None = None,
        __event_call__: Callable[[dict[str, Any]], Awaitable[Any]] | None = None,
    ) -> None:
        chat_id = str(body.get("chat_id") or "")
        found = self.pending.in_chat(chat_id) if chat_id else None
        if found is None:
            if __event_emitter__:
                note = {"type": "info", "content": "Nothing waits for your review in this chat."}
                await __event_emitter__({"type": "notification", "data": note})
            return
        _server, review = found
        user_id = str((__user__ or {}).get("id") or "")
        valves, values = await pipe_settings(review.function_id, chat_id)
        turn = _Turn(valves, review.model, values, __event_emitter__, __event_call__)
        turn.function_id = review.function_id
        metadata = {
            "chat_id": chat_id,
            "message_id": str(body.get("id") or ""),
            "user_id": user_id,
            "session_id": body.get("session_id"),
        }
        writer = await MessageText.open(metadata, metadata["message_id"])
        turn.rewrite = writer
        async with lgos_client(valves, user_id) as client:
            turn.client = client
            async for text in turn.run([], metadata, self.pending, resume=review):
                if text and writer is not None:
                    await writer.append(text)


# The header Open WebUI itself names its signed-in user in (ENABLE_FORWARD_USER_INFO_HEADERS):
# the LiteLLM gateway reads it as the end user and passes it on to LGOS as the owner of what
# the request creates, so one user never reaches another's runs and reviews
# (demo/litellm/lgos_owner.py, docs/security.md).
USER_ID_HEADER = "X-OpenWebUI-User-Id"


def lgos_client(valves: "PipeValves", user_id: str) -> httpx.AsyncClient:
    """An HTTP client for LGOS (or the gateway) that acts for the user `user_id`."""
    headers = {"Authorization": f"Bearer {valves.api_key}"} if valves.api_key else {}
    if user_id:
        headers[USER_ID_HEADER] = user_id
    return httpx.AsyncClient(
        base_url=valves.base_url.rstrip("/"),
        headers=headers,
        timeout=httpx.Timeout(valves.timeout_seconds, connect=10.0),
    )


async def pipe_settings(function_id: str, chat_id: str) -> tuple["PipeValves", dict[str, Any]]:
    """The admin valves of a Pipe function and a chat's settings (its variables), from Open
    WebUI's database."""
    try:
        from open_webui.models.chats import Chats  # type: ignore[import-not-found]
        from open_webui.models.functions import Functions  # type: ignore[import-not-found]
    except ImportError:  # outside Open WebUI
        return PipeValves(), {}
    valves = await Functions.get_function_valves_by_id(function_id) or {}
    chat = await Chats.get_chat_by_id(chat_id)
    return PipeValves(**valves), dict((chat.variables if chat else None) or {})


# Where a user changes a chat's settings in Open WebUI 0.12 (the chat box's `{ }` button).
SETTINGS_PLACE = "Change it in this chat's settings: the **Chat Variables** button of the chat box."


class _Turn:
    """One assistant turn: possibly several Responses (a review answer starts a new one)."""

    def __init__(
        self,
        valves: "PipeValves",
        model: str,
        settings: dict[str, Any],
        emit: Emitter | None,
        call: Callable[[dict[str, Any]], Awaitable[Any]] | None,
    ) -> None:
        self.valves = valves
        self.model = model
        self.settings = dict(settings)  # the chat's, by setting name
        self._emit = emit
        self._call = call
        self.client: httpx.AsyncClient
        # The background Response being followed, cancelled if the user presses Stop.
        self.active_id: str | None = None
        self.client_settings: dict[str, Any] | None = None
        self.background = False
        self._last_status: tuple[str, bool] = ("", False)
        # The finished message this turn writes into ("Answer now"), if any.
        self.rewrite: MessageText | None = None
        # Which Pipe runs this turn, and how the chat names the server and its fix.
        self.function_id = ""
        self.upstream = valves.upstream_name or "LGOS"
        self.start_hint = (
            f"Start it with `{valves.upstream_start}`, then send your message again."
            if valves.upstream_start
            else "Check that it runs, then send your message again."
        )

    async def status(self, description: str, done: bool = False, **extra: str) -> None:
        """One line of the message's status history (`extra` is stored, not shown: the
        background Response id, for whoever reads the chat back)."""
        if self._emit and (description, done) != self._last_status:
            self._last_status = (description, done)
            data = {"description": description, "done": done, **extra}
            await self._emit({"type": "status", "data": data})

    async def run(
        self,
        input_items: list[dict[str, Any]],
        metadata: dict[str, Any],
        pending: PendingReviews,
        resume: Review | None = None,
    ) -> AsyncIterator[str]:
        """The turn's text. `resume` is a review answered from its card after the turn that
        showed it ended ("Answer now"): the card is asked again and the run resumed."""
        chat_id = str(metadata.get("chat_id") or "")
        server = self.valves.base_url
        try:
            base = await self._request_base(metadata)
            waiting = None if resume else (pending.pop(server, chat_id) if chat_id else None)
            # The line saying a review was answered, shown once the graph has taken the answer
            # (a refused answer never reads as answered), and the typed answer it was, if any.
            announce = ""
            typed: str | None = None
            if waiting is not None:
                # A review waits in this chat: whatever was typed answers it, never a new run.
                review: Review | None = waiting
                typed = _content_text(input_items[-1]["content"]).strip() if input_items else ""
                request = waiting.answer_request(base, typed)
                announce = answered_line(typed).lstrip()
            else:
                review = resume
                request = {**base, "input": input_items}
            message_id = str(metadata.get("message_id") or "")
            ask_first = resume is not None
            while True:
                refused: str | None = None
                response: dict[str, Any] = {}
                if not ask_first:
                    try:
                        async for text, final in self._respond(request, self.background):
                            if final is not None:
                                response = final
                            else:
                                # Text of the resumed run: the graph took the answer.
                                if announce:
                                    yield announce
                                    announce = ""
                                yield text
                    except LgosError as exc:
                        if review is None or exc.status != 400:
                            raise
                        refused = str(exc)  # the graph refused the answer (a 400 on the resume)
                    failed = response.get("status") == "failed" and not answer_texts(response)
                    if review is not None and refused is None and failed:
                        # A background continuation that failed with the graph's message.
                        refused = (response.get("error") or {}).get("message") or "refused"
                    if refused is not None and review is not None:
                        yield f"\n\n> **The answer was not accepted:** {refused}\n\n"
                        announce = ""
                    else:
                        if announce:
                            yield announce
                            announce = ""
                        if waiting is not None and typed is not None:
                            # The typed answer was taken: the earlier message no longer waits.
                            await mark_chat_waiting(chat_id, False, self._emit)
                            await self._mark_answered_elsewhere(waiting, metadata, typed)
                            typed = None
                        async for note in self._sources_and_outcome(response):
                            yield note
                        calls = interrupt_calls(response)
                        if not calls or response.get("status") != "completed":
                            return
                        review = Review(response["id"], calls)
                        yield review.card_markdown()
                ask_first = False
                assert review is not None
                review = Review(
                    review.response_id,
                    review.calls,
                    message_id=message_id,
                    function_id=self.function_id,
                    model=self.model,
                )
                # Saved before the card opens: a Stop, a reload, a restart or an answer typed
                # into the chat box while the card is open all find it.
                if chat_id:
                    pending.put(server, chat_id, review)
                    await mark_chat_waiting(chat_id, True, self._emit)
                await self.status("Waiting for your review")
                answers = []
                standing = pending.standing(chat_id) if chat_id else {}
                for call in review.calls:
                    question = ReviewQuestion.parse(call)
                    if question.always and standing.get(question.kind) == question.always:
                        # Answered as the reviewer asked for every question of this kind.
                        answers.append(question.always)
                        yield (
                            f"\n\n> **Answered {question.always}** (always, in this chat): "
                            f"{question.question}\n"
                        )
                        continue
                    answer = await self._ask(call)
                    if answer is not None and question.always and answer == question.always_label:
                        if chat_id:
                            pending.stand_by(chat_id, question.kind, question.always)
                        answer = question.always
                    if answer is None:
                        if chat_id:
                            titling = asyncio.create_task(
                                mark_once_titled(chat_id, pending, self._emit)
                            )
                            _background_tasks.add(titling)
                            titling.add_done_callback(_background_tasks.discard)
                        if resume is None:  # an "Answer now" message already says it waits
                            yield review.waiting_note()
                        await self.status("Waiting for your review", done=True)
                        return
                    answers.append(answer)
                if chat_id:
                    pending.pop(server, chat_id)
                    await mark_chat_waiting(chat_id, False, self._emit)
                if resume is not None:
                    # "Answer now" on a message that says the review waits: it no longer does.
                    await self._mark_answered_elsewhere(review, metadata, " · ".join(answers))
                    resume = None
                    yield "\n"
                else:
                    announce = answered_line(" · ".join(answers))
                request = review.answer_request(base, *answers)
        except LgosError as exc:
            log.warning("request for %s failed: %s", self.model, exc)
            if self.upstream != "LGOS" and exc.upstream_unreachable:
                # The gateway is up; the piece that is down is LGOS behind it.
                await self.status("LGOS unreachable", done=True)
                yield f"\n\n{self._lgos_down_text()}"
                return
            await self.status("Failed", done=True)
            who = (
                "Not sent"
                if exc.status == 400
                and exc.param == "metadata.lgos_settings"
                and (isinstance(exc.__cause__, SettingError))
                else f"{self.upstream} refused the request"
            )
            yield f"\n\n**{who}:** {exc}{self._settings_hint(exc)}"
        except httpx.HTTPError as exc:
            log.warning("%s at %s unreachable: %r", self.upstream, self.valves.base_url, exc)
            await self.status(f"{self.upstream} unreachable", done=True)
            yield (
                f"\n\n**Could not reach {self.upstream}** at {self.valves.base_url} ({exc})."
                f" {self.start_hint}"
            )
        except BaseException:
            # Stop in Open WebUI cancels the task that consumes this generator
            # (asyncio.CancelledError at our current await, or GeneratorExit at a yield).
            # A background run keeps running on the server unless we cancel it ourselves.
            if self.active_id:
                await asyncio.shield(self._cancel(self.active_id))
            else:
                # A foreground stream ends when its connection closes; only say so.
                await asyncio.shield(self._quiet_status("Stopped"))
            raise

    async def _request_base(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """Model, conversation id and changed settings; decides foreground or background."""
        info = await self._model_info()
        self.client_settings = info.get("client_settings")
        values = dict(self.settings)
        chosen = values.pop("run_in_background", None)
        try:
            wants_background = (
                bool(info.get("background_by_default"))
                if chosen is None or chosen == ""
                else as_switch("run_in_background", chosen, "Run in background")
            )
            settings = changed_settings(values, self.client_settings)
        except SettingError as exc:  # a value typed through the API, not the chat's form
            raise LgosError(str(exc), 400, "metadata.lgos_settings") from exc
        self.background = wants_background and "background" in info.get("features", [])
        base: dict[str, Any] = {"model": self.model}
        request_metadata = {}
        chat_id = str(metadata.get("chat_id") or "")
        if chat_id:
            request_metadata["conversation_id"] = chat_id
        if settings:
            request_metadata["lgos_settings"] = json.dumps(settings)
        if request_metadata:
            base["metadata"] = request_metadata
        return base

    async def _mark_answered_elsewhere(
        self, review: Review, metadata: dict[str, Any], answer: str
    ) -> None:
        """The message that showed a review answered later says so, instead of "waiting"."""
        if not review.message_id:
            return
        where = "" if review.message_id == metadata.get("message_id") else " in the next message"
        done = f"> **Review answered**{where}: {answer} · {_now()}"
        try:
            if self.rewrite is not None and self.rewrite.message_id == review.message_id:
                writer = self.rewrite
            else:
                writer = await MessageText.open(metadata, review.message_id)
            if writer is not None:
                await writer.replace(review.waiting_note().strip(), done)
        except Exception as exc:  # the old message is a courtesy: the answer itself went through
            log.warning("could not mark the earlier review message answered: %s", exc)

    def _lgos_down_text(self) -> str:
        """The gateway is up, LGOS behind it is not: name that piece and its fix (the
        gateway's own wording, with its client's internals, stays in the log)."""
        fix = (
            f"Start LGOS with `{self.valves.lgos_start}`, then send your message again."
            if self.valves.lgos_start
            else "Check that LGOS runs, then send your message again."
        )
        return (
            f"**LGOS is not reachable:** {self.upstream} at {self.valves.base_url} answers, "
            f"but cannot connect to LGOS behind it. {fix}"
        )

    def _settings_hint(self, exc: LgosError) -> str:
        """Where to fix a refused setting, with the values the graph allows."""
        if exc.param != "metadata.lgos_settings":
            return ""
        allowed = allowed_values(self.client_settings)
        said = str(exc).lower().replace(" ", "_")
        lines = [f"- **{key}**: {text}" for key, text in allowed.items() if key in said]
        return "\n\n" + SETTINGS_PLACE + ("\n\nAllowed:\n" + "\n".join(lines) if lines else "")

    async def _respond(
        self, request: dict[str, Any], background: bool
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        """One Response: yields (text, None) as the answer arrives, then ("", final)."""
        if background:
            response = await self._run_in_background(request)
            for text in answer_texts(response):
                yield text, None
            yield "", response
            return
        async for text, final in self._stream(request):
            yield text, final

    async def _model_info(self) -> dict[str, Any]:
        """Features and per-request settings the model advertises (empty if it has none)."""
        response = await self.client.get(f"/models/{self.model}")
        if response.status_code != 200:
            raise LgosError.from_response(response)
        info = response.json().get("lgos")
        if info is None:
            info = (await gateway_catalog(self.client)).get(self.model)
        return info or {}

    async def _run_in_background(self, request: dict[str, Any]) -> dict[str, Any]:
        """Create a background Response and follow it to a terminal status.

        Created with `stream: true`, so the status line shows the step the graph reports; an
        engine that cannot stream, or a stream that breaks, is polled instead.
        """
        live = _LiveStatus(self)
        try:
            async with self.client.stream(
                "POST", "/responses", json={**request, "background": True, "stream": True}
            ) as http:
                if http.status_code == 400:
                    await http.aread()
                    error = LgosError.from_response(http)
                    if error.param != "stream":
                        raise error
                    return await self._poll(await self._create_polled(request), live)
                if http.status_code != 200:
                    await http.aread()
                    raise LgosError.from_response(http)
                try:
                    async for event in _sse_events(http):
                        kind = event.get("type")
                        if kind == "response.created":
                            self.active_id = event["response"]["id"]
                            await live.start(event["response"])
                        elif kind in ("response.queued", "response.in_progress"):
                            live.state = event["response"]["status"]
                            await live.show()
                        elif kind == "response.output_item.done" and _is_commentary(event["item"]):
                            live.step = " ".join(answer_texts_of_item(event["item"]))
                            await live.show()
                        elif kind in TERMINAL_EVENTS:
                            final: dict[str, Any] = event["response"]
                            self.active_id = None
                            await live.finish(final)
                            return final
                except httpx.HTTPError as exc:
                    log.info("background stream broke (%r): polling instead", exc)
            if not self.active_id:
                raise LgosError("the background stream ended before the run was created")
            polled = await self.client.get(f"/responses/{self.active_id}")
            if polled.status_code != 200:
                raise LgosError.from_response(polled)
            return await self._poll(polled.json(), live)
        finally:
            live.stop()

    async def _create_polled(self, request: dict[str, Any]) -> dict[str, Any]:
        created = await self.client.post("/responses", json={**request, "background": True})
        if created.status_code != 200:
            raise LgosError.from_response(created)
        response: dict[str, Any] = created.json()
        return response

    async def _poll(self, response: dict[str, Any], live: "_LiveStatus") -> dict[str, Any]:
        self.active_id = response["id"]
        await live.start(response)
        while response["status"] not in TERMINAL:
            await asyncio.sleep(self.valves.poll_interval_seconds)  # polling interval
            polled = await self.client.get(f"/responses/{response['id']}")
            if polled.status_code != 200:
                raise LgosError.from_response(polled)
            response = polled.json()
            live.state = response["status"]
            await live.show()
        self.active_id = None
        await live.finish(response)
        return response

    async def _stream(
        self, request: dict[str, Any]
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        """Stream a foreground Response: yields (text delta, None), then ("", final Response)."""
        phases: dict[str, str | None] = {}
        async with self.client.stream(
            "POST", "/responses", json={**request, "stream": True}
        ) as http:
            if http.status_code != 200:
                await http.aread()
                raise LgosError.from_response(http)
            await self.status("Running")
            async for event in _sse_events(http):
                kind = event.get("type")
                if kind == "response.output_item.added":
                    item = event["item"]
                    phases[item.get("id", "")] = item.get("phase")
                elif kind == "response.output_text.delta":
                    # Commentary is progress: shown as a status line, not as answer text.
                    if phases.get(event.get("item_id", "")) != "commentary":
                        yield event["delta"], None
                elif kind == "response.output_item.done":
                    item = event["item"]
                    if _is_commentary(item):
                        await self.status(" ".join(answer_texts_of_item(item)))
                elif kind in TERMINAL_EVENTS:
                    yield "", event["response"]
                    return
                elif kind == "error":
                    raise LgosError(event.get("message") or json.dumps(event))
        raise LgosError("the stream ended without a terminal event")

    async def _sources_and_outcome(self, response: dict[str, Any]) -> AsyncIterator[str]:
        """Citations as Open WebUI sources; failures and cancellations as readable text."""
        if self._emit:
            # In the order of the report's own numbers: Open WebUI's chip [n] opens the n-th
            # source it was given, so source n must be document n.
            for number, title, url, cited in numbered_sources(response):
                # The chip shows the name, cut after 30 characters: the report's number first.
                # The source's popup shows the cited passage, its title links the page.
                name = f"[{number}] {title}"
                await self._emit(
                    {
                        "type": "source",
                        "data": {
                            "source": {"name": name, "url": url, "id": url},
                            "document": [cited or title],
                            "metadata": [{"source": url, "name": name, "external": True}],
                        },
                    }
                )
        status = response.get("status")
        if status == "completed":
            paused = bool(interrupt_calls(response))
            if not paused:
                await self.status("Done", done=True)
        elif status == "failed":
            error = response.get("error") or {}
            await self.status("Failed", done=True)
            yield f"\n\n**The run failed:** {error.get('message', 'unknown error')}"
        elif status == "cancelled":
            await self.status("Cancelled", done=True)
            yield "\n\n_The run was cancelled._"
        elif status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason", "unknown")
            await self.status("Incomplete", done=True)
            yield f"\n\n_The answer is incomplete ({reason})._"

    async def _ask(self, call: dict[str, Any]) -> str | None:
        """Ask one review question in Open WebUI's in-chat question card.

        Returns the answer, or None when nothing should be sent: the card was dismissed
        (Cancel), it timed out, or there is no browser session. The graph then stays paused.
        """
        question = ReviewQuestion.parse(call)
        if self._call is None:
            return None
        result = await self._call(
            {
                "type": "request:user_input",
                "data": {
                    "questions": [question.card()],
                    "allow_other": question.allow_other,
                    "timeout_ms": int(self.valves.review_card_timeout_seconds * 1000),
                },
            }
        )
        if not isinstance(result, dict) or result.get("status") != "answered":
            return None  # dismissed, timed out or the session went away: never an answer
        picked = (result.get("answers") or {}).get(question.call_id) or {}
        if picked.get("type") == "option":
            return question.choice_for(str(picked.get("label") or ""))
        text = str(picked.get("text") or "").strip()
        return text or None

    async def _quiet_status(self, description: str) -> None:
        try:
            await self.status(description, done=True)
        except Exception as exc:  # the chat may be gone already
            log.info("status not shown: %s", exc)

    async def _cancel(self, response_id: str) -> None:
        """Best effort: ask LGOS to cancel the background Response the user stopped."""
        try:
            cancelled = await self.client.post(f"/responses/{response_id}/cancel")
            log.info("cancelled %s: HTTP %s", response_id, cancelled.status_code)
            await self.status("Cancelled", done=True)
            # The generator cannot yield any more: the message says it through an event.
            if self._emit:
                note = "\n\n_Stopped: the background run was cancelled on the server._"
                await self._emit({"type": "message", "data": {"content": note}})
                await self._emit(
                    {"type": "chat:completion", "data": {"content": note.strip(), "done": True}}
                )
        except Exception as exc:
            log.warning("could not cancel %s: %s", response_id, exc)


class MessageText:
    """The text of a chat message that no longer streams, rewritten in place.

    Open WebUI draws a finished message from its `output` items, not from its `content`, and
    saves neither on a later event: both are written to its database here, and sent to the
    page as a completion event, which redraws the message.
    """

    def __init__(self, chat_id: str, message_id: str, content: str, emit: Emitter) -> None:
        self.chat_id = chat_id
        self.message_id = message_id
        self.content = content
        self._emit = emit

    @classmethod
    async def open(cls, metadata: dict[str, Any], message_id: str) -> "MessageText | None":
        try:
            from open_webui.models.chats import Chats  # type: ignore[import-not-found]
            from open_webui.socket.main import get_event_emitter  # type: ignore[import-not-found]
        except ImportError:  # outside Open WebUI
            return None
        chat_id = str(metadata.get("chat_id") or "")
        message = await Chats.get_message_by_id_and_message_id(chat_id, message_id)
        emit = await get_event_emitter(
            {
                "chat_id": chat_id,
                "message_id": message_id,
                "user_id": metadata.get("user_id"),
                "session_id": metadata.get("session_id"),
            }
        )
        if message is None or emit is None:
            return None
        return cls(chat_id, message_id, str(message.get("content") or ""), emit)

    async def append(self, text: str) -> None:
        await self.set(self.content + text)

    async def replace(self, old: str, new: str) -> None:
        if old in self.content:
            await self.set(self.content.replace(old, new))

    async def set(self, content: str) -> None:
        from open_webui.models.chats import Chats

        self.content = content
        output = [
            {
                "type": "message",
                "id": f"msg_{self.message_id.replace('-', '')[:24]}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": content}],
            }
        ]
        await Chats.upsert_message_to_chat_by_id_and_message_id(
            self.chat_id, self.message_id, {"content": content, "output": output}
        )
        await self._emit({"type": "chat:completion", "data": {"output": output}})


class _LiveStatus:
    """The status line of one background run: its state and the step the graph last
    reported, written only when one of them changes; once, if the run is still queued after
    a few seconds, that no worker has taken it (counted from the Response's created_at)."""

    def __init__(self, turn: _Turn) -> None:
        self.turn = turn
        self.created_at = time.time()
        self.state = "queued"
        self.step = ""
        self.shown = ""
        self.response_id = ""
        self.warning: asyncio.Task[None] | None = None

    async def start(self, response: dict[str, Any]) -> None:
        self.created_at = response.get("created_at") or self.created_at
        self.state = response.get("status") or self.state
        self.response_id = str(response.get("id") or "")
        await self.show()
        if self.warning is None:
            self.warning = asyncio.create_task(self._warn_when_nobody_takes_it())

    async def _warn_when_nobody_takes_it(self) -> None:
        left = self.created_at + QUEUED_WARNING_SECONDS - time.time()
        await asyncio.sleep(max(0.0, left))  # a deadline to report, not coordination
        if self.state == "queued":
            # The deadline has come, whatever the clock says: Open WebUI's loop (uvloop)
            # counts timers in whole milliseconds and often wakes up to 1 ms early. Read
            # from the clock, 2.999 s gave "Queued" again, which is unchanged, so nothing
            # was shown and the timer never looked again.
            await self.show(at_least=QUEUED_WARNING_SECONDS)

    async def show(self, at_least: float = 0) -> None:
        """Write the line if it changed; `at_least` is how long the run has been queued at
        the least (the timer's deadline)."""
        waited = max(time.time() - self.created_at, at_least) if self.state == "queued" else 0
        line = progress_line(self.state, self.step, waited, self.turn.valves.worker_start)
        if line != self.shown:
            self.shown = line
            await self.turn.status(line, response_id=self.response_id)

    async def finish(self, response: dict[str, Any]) -> None:
        self.stop()
        if response.get("status") == "completed" and interrupt_calls(response):
            await self.turn.status("Waiting for your review")

    def stop(self) -> None:
        if self.warning is not None:
            self.warning.cancel()
            self.warning = None


def answer_texts_of_item(item: dict[str, Any]) -> list[str]:
    return [
        part.get("text", "")
        for part in item.get("content") or []
        if part.get("type") == "output_text"
    ]


async def _sse_events(http: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Decode a server-sent event stream into JSON objects (comments are keep-alives)."""
    data: list[str] = []
    async for line in http.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            payload = "\n".join(data)
            data = []
            if payload != "[DONE]":
                yield json.loads(payload)
