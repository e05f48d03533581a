"""Chainlit chat for LGOS graphs, speaking only the OpenAI Responses API.

The app knows nothing of LGOS internals: it reads the model catalog (`/v1/models`), renders
the settings each model advertises, and drives streaming, background runs, human review and
cancellation with the plain `openai` SDK. Point it at the LGOS API or at a gateway in front of
it with `LGOS_BASE_URL` (or `OPENAI_BASE_URL`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import chainlit as cl
import chainlit.config
import httpx
import lgos_ui as ui
from chainlit.config import (
    ChainlitConfigOverrides,
    FeaturesSettings,
    SpontaneousFileUploadFeature,
)
from chainlit.context import ChainlitContextException
from chainlit.data import get_data_layer
from chainlit.data.chainlit_data_layer import ChainlitDataLayer
from chainlit.element import Element
from chainlit.input_widget import InputWidget, NumberInput, Select, Slider, Switch, TextInput
from chainlit.utils import utc_now
from openai import (
    APIConnectionError,
    APIError,
    APIStatusError,
    AsyncOpenAI,
    DefaultAsyncHttpxClient,
)

BASE_URL = (
    os.environ.get("LGOS_BASE_URL")
    or os.environ.get("OPENAI_BASE_URL")
    or "http://127.0.0.1:8000/v1"
)
# LGOS itself needs no key; a gateway may. The SDK refuses an empty key, hence the filler.
API_KEY = os.environ.get("LGOS_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"
# The mock login's users, `name:password` entries (each user's threads, runs and reviews are
# their own, down to LGOS: see `name_the_user`).
USERS = dict(
    entry.strip().split(":", 1)
    for entry in os.environ.get("LGOS_CHAINLIT_USERS", "demo:demo,guest:guest").split(",")
    if ":" in entry
)
# LiteLLM's standard end-user header: the gateway passes the user on to LGOS as the owner of
# what the request creates (demo/litellm/lgos_owner.py, docs/security.md).
END_USER_HEADER = "x-litellm-end-user-id"
POLL_SECONDS = float(os.environ.get("LGOS_CHAINLIT_POLL_SECONDS", "1"))
DB_POOL_SIZE = int(os.environ.get("LGOS_CHAINLIT_DB_POOL_SIZE", "4"))
# Named in the chat when a piece is down: what LGOS_BASE_URL is, the command that starts it,
# and the command that starts a background worker.
UPSTREAM_NAME = os.environ.get("LGOS_UPSTREAM_NAME") or "the LGOS API"
UPSTREAM_START = os.environ.get("LGOS_UPSTREAM_START", "")
WORKER_START = os.environ.get("LGOS_WORKER_START", "just demo/worker")


def signed_in_user() -> str | None:
    """The identifier of the user whose session this code runs for, if any."""
    try:
        user = cl.context.session.user
    except ChainlitContextException:  # outside a session (start-up)
        return None
    return user.identifier if user is not None else None


async def name_the_user(request: httpx.Request) -> None:
    """Every request says which signed-in user it is for, so that one user never reaches
    another's runs and reviews (pollers and resumed threads run in their session too)."""
    user = signed_in_user()
    if user:
        request.headers[END_USER_HEADER] = f"chainlit:{user}"


client = AsyncOpenAI(
    base_url=BASE_URL,
    api_key=API_KEY,
    http_client=DefaultAsyncHttpxClient(event_hooks={"request": [name_the_user]}),
)

# Chainlit keeps each session's files (every element it sends with content, a review card
# included) under APP_ROOT/.files, and a process that exits removes that whole folder: with two
# processes of this app (a restart that overlaps the old one, two replicas, a second stack from
# the same checkout), the first to exit takes the other's folder away, and the other's next
# element fails with "No such file or directory". So each process keeps its own folder outside
# the app's, and removes only that one when it stops.
FILES = Path(tempfile.mkdtemp(prefix="lgos-chainlit-files-"))
chainlit.config.FILES_DIRECTORY = FILES  # read by each session when it writes a file


@cl.on_app_shutdown
def remove_own_files() -> None:
    shutil.rmtree(FILES, ignore_errors=True)


# Session keys. HISTORY and PENDING are JSON and also written to the thread's metadata in
# PostgreSQL, so a reload or a restarted Chainlit finds them again (see `persist`).
HISTORY = "lgos_history"
PENDING = "lgos_pending_review"
ACTIVE = "lgos_active_run"  # in memory only: the Response that Stop should cancel
POLLED = "lgos_polled_run"  # persisted: the background Response being polled, for a resume
SPECS = "lgos_setting_specs"
MODEL = "lgos_model"
VALID_SETTINGS = "lgos_valid_settings"  # the last settings that passed validation
REVIEW_ACTION = "lgos_review"
ALWAYS = "lgos_always"  # persisted: {kind of question: the choice made standing in this chat}
PAUSED_STATUS = "lgos_paused_status"  # in memory: the status line of a run that paused
REVIEW_CARD = "ReviewCard"  # public/elements/ReviewCard.jsx
# Example prompts per model, shown on an empty chat (demo/starters.json; absent: none).
STARTERS_FILE = Path(
    os.environ.get("LGOS_CHAINLIT_STARTERS") or Path(__file__).parents[1] / "starters.json"
)
# The profile a new chat opens on when the catalog has it.
DEFAULT_MODEL = os.environ.get("LGOS_CHAINLIT_DEFAULT_MODEL", "simple-graph")

# Response id -> the task polling it in this process. A reload starts a new session that takes
# the polling over; the old session's task (its page is gone) is cancelled, so the result is
# shown and stored once.
pollers: dict[str, asyncio.Task[Any]] = {}
# Reviews whose answer this process is sending right now: a session that resumes the thread
# meanwhile must not offer the card again, and no second answer (another tab's card or typed
# text) may be sent for them. Marked before the answer's first await, so nothing that runs
# while the answer is on its way finds the review still open.
answering: set[str] = set()

BEING_ANSWERED = (
    "This review is being answered right now; its result shows here when the run goes on."
)


# ---------------------------------------------------------------- persistence layer


class SmallPoolDataLayer(ChainlitDataLayer):
    """Chainlit's own PostgreSQL data layer, with a pool sized for a demo.

    The stock layer opens asyncpg's default pool (10 connections held open), which is a lot on
    a PostgreSQL shared with LGOS and its workers. Tables: schema.sql (applied by setup_db.py).
    """

    async def connect(self) -> None:
        if not self.pool:
            self.pool = await asyncpg.create_pool(
                self.database_url, min_size=1, max_size=DB_POOL_SIZE
            )


@cl.data_layer
def data_layer() -> ChainlitDataLayer | None:
    url = os.environ.get("DATABASE_URL")
    return SmallPoolDataLayer(database_url=url) if url else None


# ---------------------------------------------------------------- login and catalog


@cl.password_auth_callback
def login(username: str, password: str) -> cl.User | None:
    """The demo's mock login (LGOS_CHAINLIT_USERS), so threads persist per user."""
    expected = USERS.get(username)
    if expected is not None and hmac.compare_digest(password.encode(), expected.encode()):
        return cl.User(identifier=username, metadata={"provider": "mock"})
    return None


async def gateway_metadata() -> dict[str, dict[str, Any]]:
    """`lgos` metadata a LiteLLM gateway keeps in `model_info` (its /v1/models drops it).

    An empty dict when the server has no `/model/info` (LGOS itself, other gateways).
    """
    try:
        reply = await client.get("/model/info", cast_to=httpx.Response)
        rows = reply.json().get("data") or []
    except (APIError, ValueError, AttributeError):
        return {}
    found = {}
    for row in rows:
        meta = (row.get("model_info") or {}).get("lgos")
        if isinstance(meta, str):
            meta = json.loads(meta)
        if isinstance(meta, dict) and row.get("model_name"):
            found[row["model_name"]] = meta
    return found


async def catalog_entries() -> list[dict[str, Any]]:
    """`/v1/models` entries, completed with the gateway's copy of the `lgos` metadata."""
    page = await client.models.list()
    entries = [m.model_dump() for m in page.data]
    if any("lgos" not in e for e in entries):
        extra = await gateway_metadata()
        for entry in entries:
            if "lgos" not in entry and entry["id"] in extra:
                entry["lgos"] = extra[entry["id"]]
    return entries


async def catalog() -> list[ui.ModelInfo]:
    return [ui.parse_model(entry) for entry in await catalog_entries()]


@cl.set_chat_profiles
async def chat_profiles(user: cl.User | None) -> list[cl.ChatProfile]:
    """One chat profile per model of the catalog, read fresh on every page load."""
    try:
        models = await catalog()
    except APIError as exc:
        cl.logger.error("cannot read the model catalog at %s: %s", BASE_URL, exc)
        return []
    starters = load_starters()
    default = DEFAULT_MODEL if any(m.id == DEFAULT_MODEL for m in models) else None
    return [
        cl.ChatProfile(
            name=m.id,
            markdown_description=ui.profile_description(m),
            default=m.id == default,
            starters=[
                cl.Starter(label=entry["label"], message=entry["message"])
                for entry in starters.get(m.id, [])
            ]
            or None,
            config_overrides=upload_overrides(m),
        )
        for m in models
    ]


def upload_overrides(model: ui.ModelInfo) -> ChainlitConfigOverrides:
    """The paperclip for this graph: off unless it takes images or files, and offering only
    the types it takes (.chainlit/config.toml turns uploads on for the whole app)."""
    types = ui.upload_types(model)
    upload = (
        SpontaneousFileUploadFeature(enabled=True, accept=types)
        if types
        else SpontaneousFileUploadFeature(enabled=False)
    )
    return ChainlitConfigOverrides(features=FeaturesSettings(spontaneous_file_upload=upload))


def load_starters() -> dict[str, list[dict[str, str]]]:
    try:
        data = json.loads(STARTERS_FILE.read_text())
    except (OSError, ValueError):
        return {}
    return {model: list(entries) for model, entries in data.items() if isinstance(entries, list)}


async def current_model() -> tuple[ui.ModelInfo, dict[str, Any] | None]:
    """The selected profile's catalog entry, with its settings (detail endpoint)."""
    model_id = cl.user_session.get("chat_profile")
    if not model_id:
        models = await catalog()
        if not models:
            raise RuntimeError(f"The model catalog at {BASE_URL} is empty.")
        model_id = models[0].id
    detail = (await client.models.retrieve(model_id)).model_dump()
    if "lgos" not in detail:
        detail["lgos"] = (await gateway_metadata()).get(model_id)
        if detail["lgos"] is None:
            del detail["lgos"]
    return ui.parse_model(detail), (detail.get("lgos") or {}).get("client_settings")


# ---------------------------------------------------------------- settings


def widget(spec: ui.SettingSpec, value: Any) -> InputWidget:
    common = {"id": spec.key, "label": spec.label, "description": spec.description}
    if spec.kind == "switch":
        return Switch(initial=bool(value), **common)
    if spec.kind == "select":
        return Select(values=spec.choices, initial_value=str(value), **common)
    if spec.kind == "slider":
        return Slider(initial=value, min=spec.minimum, max=spec.maximum, step=1, **common)
    if spec.kind in ("integer", "number"):
        return NumberInput(initial=value, **common)
    return TextInput(initial=str(value or ""), **common)


async def setup_chat(restored: dict[str, Any] | None = None) -> None:
    """Render the settings panel for the selected model (fresh chat or resumed thread).

    `restored` holds the settings of a resumed thread; a fresh chat also gets a note when the
    model has no LGOS metadata.
    """
    model, client_settings = await current_model()
    specs = ui.setting_specs(client_settings) if model.has_lgos else []
    cl.user_session.set(MODEL, model)
    cl.user_session.set(SPECS, specs)
    settings = await cl.ChatSettings(settings_widgets(model, specs, restored or {})).send()
    cl.user_session.set(VALID_SETTINGS, dict(settings or {}))
    if not model.has_lgos and restored is None:
        await cl.Message(content=ui.profile_description(model)).send()


def settings_widgets(
    model: ui.ModelInfo, specs: list[ui.SettingSpec], values: dict[str, Any]
) -> list[InputWidget]:
    """The settings panel: the app's own switches, then the graph's settings."""
    widgets: list[InputWidget] = [
        Switch(
            id=ui.STREAM_SWITCH,
            label="Stream response",
            initial=bool(values.get(ui.STREAM_SWITCH, True)),
        )
    ]
    if model.supports_background:
        # On by default only for graphs registered as meant for the background (long work).
        widgets.append(
            Switch(
                id=ui.BACKGROUND_SWITCH,
                label="Run in background",
                initial=bool(values.get(ui.BACKGROUND_SWITCH, model.background_by_default)),
                description="The run goes on on the server, also when you leave; Stop cancels it.",
            )
        )
    for spec in specs:
        value = ui.coerce(spec, values.get(spec.key, spec.default))
        widgets.append(widget(spec, value))
    return widgets


@cl.on_chat_start
async def on_chat_start() -> None:
    try:
        await setup_chat()
    except APIConnectionError as exc:
        await show_unreachable(exc)
    await show_inbox()


async def waiting_reviews() -> list[dict[str, Any]]:
    """This user's threads with a review waiting (their saved metadata), newest first."""
    layer = get_data_layer()
    user = cl.user_session.get("user")
    if not isinstance(layer, ChainlitDataLayer) or user is None:
        return []
    rows = await layer.execute_query(
        'SELECT t.id, t.name, t.metadata FROM "Thread" t JOIN "User" u ON u.id = t."userId" '
        'WHERE u.identifier = $1 AND t."deletedAt" IS NULL AND t.metadata ? $2 '
        'ORDER BY t."updatedAt" DESC LIMIT 20',
        {"identifier": user.identifier, "key": PENDING},
    )
    found = []
    for row in rows:
        metadata = row["metadata"]
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        record = (metadata or {}).get(PENDING)
        if record and record.get("calls"):
            question = ui.parse_review(record["calls"][0]).question
            found.append({"id": str(row["id"]), "name": row["name"], "question": question})
    return found


async def show_inbox() -> None:
    """A new chat lists the reviews waiting in the user's chats, in the side panel: each link
    opens its thread, whose card is still pending there."""
    try:
        waiting = await waiting_reviews()
    except Exception as exc:  # the inbox is a convenience: a new chat works without it
        cl.logger.warning("cannot list the waiting reviews: %s", exc)
        return
    if not waiting:
        return
    lines = [
        f"- [{ui.clip(entry['name'] or 'Untitled chat', 60)}](/thread/{entry['id']}): "
        f"{ui.clip(entry['question'], 90)}"
        for entry in waiting
    ]
    # A side panel, not a message: nothing is added to (or creates) a thread.
    title = f"Waiting for your review ({len(waiting)})"
    await cl.ElementSidebar.set_elements(
        [cl.Text(name=title, content="\n".join(lines), display="side")], key="lgos-inbox"
    )
    await cl.ElementSidebar.set_title(title)


async def show_unreachable(exc: APIConnectionError) -> None:
    """An outage in words: which server, and what to do, not a bare "Connection error."."""
    fix = f"Start it with `{UPSTREAM_START}`" if UPSTREAM_START else "Check that it runs"
    await cl.ErrorMessage(
        content=f"Could not reach {UPSTREAM_NAME} at {BASE_URL} ({exc.message}). "
        f"{fix}, then reload the page or send your message again."
    ).send()


@cl.on_settings_update
async def on_settings_update(values: dict[str, Any]) -> None:
    """Keep only values the graph accepts; explain a refused one with the allowed values."""
    specs: list[ui.SettingSpec] = cl.user_session.get(SPECS) or []
    valid = dict(cl.user_session.get(VALID_SETTINGS) or {})
    problems = []
    for spec in specs:
        problem = ui.setting_problem(spec, values.get(spec.key))
        if problem:
            problems.append(problem)
            values[spec.key] = valid.get(spec.key, spec.default)
    cl.user_session.set("chat_settings", values)
    cl.user_session.set(VALID_SETTINGS, dict(values))
    if problems:
        # The panel shows the kept values again, not the refused ones.
        model: ui.ModelInfo = cl.user_session.get(MODEL)
        await cl.ChatSettings(settings_widgets(model, specs, values)).send()
        cl.user_session.set("chat_settings", values)
        kept = "; ".join(problems)
        await cl.ErrorMessage(
            content=f"Setting not changed: {kept} The previous value is kept."
        ).send()


def request_options() -> tuple[dict[str, Any], bool, bool]:
    """Request metadata (changed settings only), background flag and stream flag."""
    model: ui.ModelInfo = cl.user_session.get(MODEL)
    values = cl.user_session.get(VALID_SETTINGS) or cl.user_session.get("chat_settings") or {}
    changed = ui.changed_settings(cl.user_session.get(SPECS) or [], values)
    metadata = ui.request_metadata(changed, cl.context.session.thread_id)
    background = model.supports_background and bool(values.get(ui.BACKGROUND_SWITCH))
    stream = bool(values.get(ui.STREAM_SWITCH, True))
    return metadata, background, stream


# ---------------------------------------------------------------- persistence


async def persist(key: str, value: Any) -> None:
    """Keep `value` in the session and in the thread's metadata right away.

    Chainlit itself saves the session only when the socket disconnects cleanly; a crash would
    lose a pending review. update_thread merges metadata, and a None value deletes the key.
    """
    cl.user_session.set(key, value)
    layer = get_data_layer()
    thread_id = cl.context.session.thread_id
    if layer and thread_id:
        await layer.update_thread(thread_id=thread_id, metadata={key: value})


# ---------------------------------------------------------------- running a turn


async def run_turn(
    request_input: str | list[dict[str, Any]],
    previous_response_id: str | None = None,
    on_accepted: Callable[[], Awaitable[None]] | None = None,
    answers_review: bool = False,
    status_message_id: str | None = None,
    on_taken: Callable[[], Awaitable[None]] | None = None,
) -> str | None:
    """Send one Responses request and show its result.

    `on_accepted` runs once the server has taken the request (the run is then its business).
    When the request answers a review, a refused answer is not shown here but returned (the
    graph's message), so the review card can show it and ask again; `on_taken` runs when a
    Response that answered a review ended without refusing it. `status_message_id` is
    the status line of the paused run, which a background answer goes on using: one line
    per run, however many reviews it pauses on.
    """
    model: ui.ModelInfo = cl.user_session.get(MODEL)
    metadata, background, stream = request_options()
    kwargs: dict[str, Any] = {"model": model.id, "input": request_input}
    if metadata:
        kwargs["metadata"] = metadata
    if previous_response_id:
        kwargs["previous_response_id"] = previous_response_id
    try:
        if background:
            response, shown = await run_background(kwargs, on_accepted, status_message_id)
        elif stream:
            response, shown = await run_streamed(kwargs, on_accepted)
        else:
            response = (await client.responses.create(**kwargs)).model_dump()
            shown = False
            if on_accepted:
                await on_accepted()
    except APIStatusError as exc:
        if answers_review and exc.status_code == 400:
            # The graph refused the answer: the review card shows why and asks again.
            return ui.readable_error(exc.message, exc.body)
        await show_api_error(exc)
        return None
    except APIConnectionError as exc:
        await show_unreachable(exc)
        return None
    finally:
        cl.user_session.set(ACTIVE, None)
    if on_taken is not None and not ui.is_refusal(response):
        await on_taken()
    return await finish(response, shown, answers_review=answers_review)


def api_error_code(exc: APIStatusError) -> str | None:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    return error.get("code") if isinstance(error, dict) else None


async def show_api_error(exc: APIStatusError) -> None:
    code = api_error_code(exc)
    if code == "interrupt_state_conflict":
        # The review was answered elsewhere, expired or is stale: it can never succeed again.
        await persist(PENDING, None)
        await cl.ErrorMessage(
            content=f"This review can no longer be answered: {exc.message}"
        ).send()
    elif code == "run_busy":
        await cl.ErrorMessage(content="The run is busy; try again in a moment.").send()
    else:
        message = ui.readable_error(exc.message, exc.body)
        await cl.ErrorMessage(content=f"The server refused the request: {message}").send()


async def run_streamed(
    kwargs: dict[str, Any], on_accepted: Callable[[], Awaitable[None]] | None
) -> tuple[dict[str, Any], bool]:
    """Stream a foreground Response: answer tokens into one message, commentary as steps."""
    phases: dict[str, str | None] = {}
    answer: cl.Message | None = None
    final: dict[str, Any] = {}
    progress = Progress()
    stream = await client.responses.create(stream=True, **kwargs)
    async with stream:
        async for event in stream:
            data = event.model_dump()
            kind = data.get("type")
            if kind == "response.created":
                cl.user_session.set(ACTIVE, {"response_id": data["response"]["id"]})
                if on_accepted:
                    await on_accepted()
            elif kind == "response.output_item.added":
                item = data["item"]
                phases[item.get("id")] = item.get("phase")
            elif kind == "response.output_text.delta":
                # Commentary arrives as whole items (shown below); only answer text streams.
                if phases.get(data.get("item_id")) == "commentary":
                    continue
                if answer is None:
                    answer = cl.Message(content="")
                await answer.stream_token(data.get("delta") or "")
            elif kind == "response.output_item.done" and ui.is_commentary(data["item"]):
                await progress.add(ui.message_text(data["item"])[0])
            elif kind in ("response.completed", "response.failed", "response.incomplete"):
                final = data["response"]
    await progress.close()
    if not final:
        raise RuntimeError("The stream ended without a terminal event.")
    rendered = ui.split_output(final.get("output") or [])
    if answer is None and rendered.answer:
        answer = cl.Message(content="")  # an answer that arrived without deltas
    if answer is not None:
        # The final object holds the whole answer and its citations.
        answer.content = answer_markdown(rendered) if rendered.answer else answer.content
        await answer.send()
    # Everything the stream carried is on the page now; finish() adds only the rest.
    return final, True


async def run_background(
    kwargs: dict[str, Any],
    on_accepted: Callable[[], Awaitable[None]] | None,
    status_message_id: str | None = None,
) -> tuple[dict[str, Any], bool]:
    """Queue a background Response and follow it, keeping its state visible.

    The run is created with `stream: true`, so the status line can show the step the graph
    reports (its commentary) while it runs; an engine that cannot stream, or a stream that
    breaks, is followed by polling instead. Either way the run is the server's: leaving the
    page does not stop it.
    """
    # A retried create (the SDK retries on network errors) must not start a second run. The
    # key goes as a header (LGOS) and in the body's `extra_headers` (what LiteLLM forwards).
    key = str(uuid.uuid4())
    options: dict[str, Any] = {
        "background": True,
        "extra_headers": {"Idempotency-Key": key},
        "extra_body": {"extra_headers": {"Idempotency-Key": key}},
        **kwargs,
    }
    status = StatusLine(status_message_id)
    try:
        stream = await client.responses.create(stream=True, **options)
    except APIStatusError as exc:
        if exc.status_code != 400 or ui.readable_error(exc.message, exc.body).find("stream") < 0:
            raise
        created = (await client.responses.create(**options)).model_dump()
        if on_accepted:
            await on_accepted()
        await status.send()
        return await poll_until_terminal(created, status), False
    live = LiveStatus(status)
    final: dict[str, Any] = {}
    async with stream:
        try:
            async for event in stream:
                data = event.model_dump()
                kind = data.get("type")
                if kind == "response.created":
                    await status.send()
                    await live.start(data["response"])
                    cl.user_session.set(
                        ACTIVE,
                        {
                            "response_id": live.response_id,
                            "status_message_id": status.id,
                            "created_at": live.created_at,
                        },
                    )
                    await persist(
                        POLLED, {"response_id": live.response_id, "status_message_id": status.id}
                    )
                    if (task := asyncio.current_task()) is not None:
                        # A reload or a reconnect resumes the thread in a new session, which
                        # then polls the run in place of this stream (see resume_polling).
                        pollers[live.response_id] = task
                    if on_accepted:
                        await on_accepted()
                elif kind in ("response.queued", "response.in_progress"):
                    live.status = data["response"]["status"]
                elif kind == "response.output_item.done" and ui.is_commentary(data["item"]):
                    live.step = ui.message_text(data["item"])[0]
                    await live.show()
                elif kind in ("response.completed", "response.failed", "response.incomplete"):
                    final = data["response"]
        except APIError as exc:
            cl.logger.warning("background stream broke (%s); polling instead", exc)
        finally:
            await live.stop()
            if pollers.get(live.response_id) is asyncio.current_task():
                del pollers[live.response_id]
    if not live.response_id:
        raise RuntimeError("The background stream ended before the run was created.")
    if not final:  # the stream broke or ended early: the run goes on, poll it
        response = (await client.responses.retrieve(live.response_id)).model_dump()
        return await poll_until_terminal(response, status), False
    await persist(POLLED, None)
    await live.finish(final)
    return final, False


class StatusLine(cl.Message):
    """The status line of a background run: a new message, or, for the answer to a review,
    the paused run's own line, which then goes on telling the run's state.

    A system message, not an assistant one: Chainlit puts copy and feedback buttons under the
    last assistant message of a run, and a state is not an answer to copy or rate (the buttons
    sat between the line and the review card). Every update of the line is one of these, or
    the page and the data layer would take it for an assistant message again.
    """

    def __init__(self, reuse_id: str | None = None, content: str | None = None) -> None:
        options = {"id": reuse_id} if reuse_id else {}
        text = ui.status_line("queued", 0) if content is None else content
        super().__init__(content=text, type="system_message", **options)
        self.reused = reuse_id is not None

    async def send(self) -> StatusLine:
        if self.reused:
            await self.update()
            return self
        await super().send()
        return self


class LiveStatus:
    """The status line of one background run, its timer counted from the run's created_at."""

    def __init__(self, message: cl.Message) -> None:
        self.message = message
        self.response_id = ""
        self.created_at = time.time()
        self.status = "queued"
        self.step: str | None = None
        self.ticker: asyncio.Task[None] | None = None

    async def start(self, response: dict[str, Any]) -> None:
        self.response_id = response["id"]
        self.created_at = response.get("created_at") or self.created_at
        self.status = response.get("status") or "queued"
        await self.show()
        self.ticker = asyncio.create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1)  # the timer's resolution, not coordination
            await self.show()

    async def show(self, *, paused: bool = False) -> None:
        elapsed = time.time() - self.created_at
        self.message.content = ui.status_line(
            self.status, elapsed, paused=paused, step=self.step, worker_start=WORKER_START
        )
        await self.message.update()

    async def stop(self) -> None:
        if self.ticker is not None:
            self.ticker.cancel()
            self.ticker = None

    async def finish(self, response: dict[str, Any]) -> None:
        await self.stop()
        self.status = response.get("status") or self.status
        paused = bool(ui.split_output(response.get("output") or []).reviews)
        await self.show(paused=paused)
        # The review card takes this line over: it says when the review was answered.
        cl.user_session.set(PAUSED_STATUS, self.message.id if paused else None)


async def poll_until_terminal(response: dict[str, Any], status: cl.Message) -> dict[str, Any]:
    """Poll a background Response, showing its state in `status`, until it is terminal."""
    response_id = response["id"]
    cl.user_session.set(
        ACTIVE,
        {
            "response_id": response_id,
            "status_message_id": status.id,
            "created_at": response.get("created_at"),
        },
    )
    # Claimed before the run is persisted as polled: a session that resumes the thread reads
    # that record and must find this task to replace it, or both would poll and both would
    # show the answer (seen when a page reconnected right after a review was answered).
    task = asyncio.current_task()
    if task is not None:
        pollers[response_id] = task
    await persist(POLLED, {"response_id": response_id, "status_message_id": status.id})
    live = LiveStatus(status)
    try:
        await live.start(response)
        while response["status"] not in ui.TERMINAL_STATUSES:
            await asyncio.sleep(POLL_SECONDS)  # polling interval, not coordination
            response = (await client.responses.retrieve(response_id)).model_dump()
            live.status = response["status"]
        await live.finish(response)
    finally:
        await live.stop()
        if pollers.get(response_id) is task:
            del pollers[response_id]
    await persist(POLLED, None)
    return response


async def resume_polling(record: dict[str, Any]) -> None:
    """Take over polling a background run after a reload or a restart, as a stoppable task."""
    response_id = record["response_id"]
    previous = pollers.get(response_id)
    if previous is not None and not previous.done():
        previous.cancel()

    async def poll() -> None:
        await cl.context.emitter.task_start()
        try:
            response = (await client.responses.retrieve(response_id)).model_dump()
            status = StatusLine(record["status_message_id"])
            response = await poll_until_terminal(response, status)
            cl.user_session.set(ACTIVE, None)
            await finish(response, False)
        except APIStatusError as exc:
            # E.g. an in-memory LGOS restarted and forgot the run: nothing left to wait for.
            await persist(POLLED, None)
            await show_api_error(exc)
        finally:
            await cl.context.emitter.task_end()

    task = asyncio.create_task(poll())
    # Claimed at once: a second resume right behind this one must find and replace it.
    pollers[response_id] = task
    cl.context.session.current_task = task


class Progress:
    """The graph's commentary for one turn: one step beside the answer, never part of it."""

    def __init__(self) -> None:
        self.step: cl.Step | None = None
        self.notes: list[str] = []

    async def add(self, text: str) -> None:
        if not text:
            return
        self.notes.append(text)
        if self.step is None:
            self.step = cl.Step(name="Progress", type="tool", show_input=False)
            self.step.start = utc_now()
            self.step.output = text
            await self.step.send()
        else:
            self.step.output = "\n\n".join(self.notes)
            await self.step.update()

    async def close(self) -> None:
        if self.step is not None:
            self.step.end = utc_now()
            await self.step.update()


def answer_markdown(rendered: ui.RenderedOutput) -> str:
    """The answer with its citation chips linked, and the sources it does not list itself."""
    content = ui.link_markers(rendered.answer, rendered.citations)
    sources = ui.sources_markdown(rendered.citations, rendered.answer)
    return (content + "\n\n" + sources).strip() if sources else content


async def finish(
    response: dict[str, Any], shown: bool, *, answers_review: bool = False
) -> str | None:
    """Show what a terminal Response holds and remember the answer for the next turn.

    Returns the graph's message when the Response answered a review and failed with it (a
    background continuation that refused the answer): the review card then asks again.
    """
    status = response.get("status")
    rendered = ui.split_output(response.get("output") or [])
    if answers_review and ui.is_refusal(response):
        return str((response.get("error") or {}).get("message") or "The answer was refused.")
    if not shown:
        progress = Progress()
        for note in rendered.commentary:
            await progress.add(note)
        await progress.close()
        content = answer_markdown(rendered)
        if content:
            await cl.Message(content=content).send()
    if rendered.refusal:
        await cl.Message(content=f"Refused: {rendered.refusal}").send()
    if status == "failed":
        error = response.get("error") or {}
        await cl.ErrorMessage(
            content=f"The run failed: {error.get('message', 'unknown error')}"
        ).send()
    elif status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason", "unknown")
        await cl.Message(content=f"The answer is incomplete ({reason}).").send()
    if rendered.answer:
        history = list(cl.user_session.get(HISTORY) or [])
        history.append({"role": "assistant", "content": rendered.answer})
        await persist(HISTORY, history)
    if rendered.reviews:
        await show_reviews(response["id"], rendered.reviews)
    return None


# ---------------------------------------------------------------- human review


def review_card(message_id: str, element_id: str | None, props: dict[str, Any]) -> cl.CustomElement:
    card = cl.CustomElement(name=REVIEW_CARD, props=props, display="inline", for_id=message_id)
    if element_id:
        card.id = element_id  # the same card, updated in place
    return card


async def show_reviews(response_id: str, calls: list[dict[str, Any]]) -> None:
    """One review card per pending question; the whole review is saved at once, before any
    card shows: a reload as soon as a card is on the page (its session then resumes the
    thread from what was saved) must find the review, or the card it draws answers nothing."""
    record: dict[str, Any] = {
        "response_id": response_id,
        "calls": [],
        "answers": {},
        "status_message_id": cl.user_session.get(PAUSED_STATUS),
    }
    messages = []
    for call in calls:
        question = ui.parse_review(call)
        # The card alone: no text repeating it, and outside the run's steps, so Chainlit adds
        # no copy or feedback buttons under it.
        message = cl.Message(content="")
        message.parent_id = None
        card = cl.CustomElement(
            name=REVIEW_CARD, props=ui.card_props(response_id, question), display="inline"
        )
        message.elements = [card]
        messages.append(message)
        record["calls"].append(
            {
                "call_id": call["call_id"],
                "arguments": call.get("arguments"),
                "message_id": message.id,
                "element_id": card.id,
            }
        )
    await persist(PENDING, record)
    for message in messages:
        await message.send()
    await answer_standing_choices(record)


async def update_card(record: dict[str, Any], call: dict[str, Any], **state: Any) -> None:
    """Redraw one review card in place (the data layer keeps it for a reloaded history)."""
    question = ui.parse_review(call)
    if state.get("decision") and call["call_id"] in record.get("standing", []):
        state["decision"] = f"{state['decision']} (always, in this chat)"
    props = ui.card_props(record["response_id"], question, **state)
    card = review_card(call["message_id"], call.get("element_id"), props)
    await card.update()


async def answer_review(response_id: str, call_id: str, answer: str, typed: bool = False) -> bool:
    """Record one answer; when every question is answered, resume the run.

    Returns False when the answer does not belong to the pending review (already answered).
    A refused answer (400 on the resume, or a continuation that failed with the graph's
    message) leaves the review pending: the card shows the message and asks again, and a
    typed answer gets the message as its reply, under it. The review reads "answered" only
    once the graph took the answer: at once for a foreground answer (LGOS checks it before the
    stream starts), when its run ends for a background one (the graph checks it in the worker).
    """
    record = cl.user_session.get(PENDING)
    calls = {c["call_id"]: c for c in (record or {}).get("calls", [])}
    if not record or record["response_id"] != response_id or call_id not in calls:
        await cl.Message(content="This review was already answered.").send()
        return False
    if call_id in record["answers"]:
        return False
    if response_id in answering:
        # Another session of this thread (a second tab, a reload) is sending its answer.
        await cl.Message(content=BEING_ANSWERED).send()
        return False
    # Everything up to here runs without an await: the answer is marked before anything
    # else can run, and the last one marks the whole review as being answered.
    record["answers"][call_id] = answer
    if len(record["answers"]) < len(record["calls"]):
        await update_card(record, calls[call_id], state="sending", decision=answer)
        await persist(PENDING, record)
        return True
    answering.add(response_id)
    return await send_answers(record, calls, call_id, typed)


async def send_answers(
    record: dict[str, Any], calls: dict[str, dict[str, Any]], call_id: str, typed: bool
) -> bool:
    """Resume the run with every answer of the review (see answer_review), which marked it
    as being answered; the mark goes once the server has the answer or the request failed."""
    response_id = record["response_id"]
    answered_at = datetime.now(UTC).isoformat()
    try:
        refused = await resume_with_answers(record, calls, call_id, answered_at)
    finally:
        answering.discard(response_id)
    if refused is not None or cl.user_session.get(PENDING) is record:
        # Refused, or the request failed before the server took it: ask again.
        record["answers"] = {}
        await persist(PENDING, record)
        for call in calls.values():
            await update_card(record, call, state="pending", error=refused)
        if record.get("status_message_id"):
            # The run still waits for its review: its line says so again, never "Failed".
            paused = ui.status_line("completed", 0, paused=True)
            await StatusLine(record["status_message_id"], paused).update()
        if refused is not None and typed:
            await cl.Message(
                content=f"**Not accepted:** {refused} The review above is still waiting: "
                "answer it again, on the card or here."
            ).send()
    return True


async def resume_with_answers(
    record: dict[str, Any], calls: dict[str, dict[str, Any]], call_id: str, answered_at: str
) -> str | None:
    """Send the review's answers; the graph's refusal, if any (see run_turn)."""
    response_id = record["response_id"]
    await update_card(record, calls[call_id], state="sending", decision=record["answers"][call_id])
    outputs = [
        {"type": "function_call_output", "call_id": cid, "output": record["answers"][cid]}
        for cid in calls
    ]
    background = request_options()[1]

    async def answered() -> None:
        # The graph took the answer: show the decision, and never offer it again.
        for cid, call in calls.items():
            await update_card(
                record,
                call,
                state="answered",
                decision=record["answers"][cid],
                answered_at=answered_at,
            )
        await persist(PENDING, None)

    return await run_turn(
        outputs,
        previous_response_id=response_id,
        on_accepted=None if background else answered,
        answers_review=True,
        status_message_id=record.get("status_message_id"),
        on_taken=answered if background else None,
    )


@cl.action_callback(REVIEW_ACTION)
async def on_review_action(action: cl.Action) -> None:
    """A click on a review card arrives as an HTTP call; the resumed run goes on in a
    stoppable task."""
    payload = action.payload
    session = cl.context.session

    async def resume() -> None:
        await cl.context.emitter.task_start()
        try:
            if payload.get("always"):
                await remember_choice(payload["call_id"], payload["answer"])
            await answer_review(payload["response_id"], payload["call_id"], payload["answer"])
        finally:
            await cl.context.emitter.task_end()

    session.current_task = asyncio.create_task(resume())


async def remember_choice(call_id: str, choice: str) -> None:
    """ "Always <choice>" on a card: later questions of its kind in this chat get that answer."""
    record = cl.user_session.get(PENDING) or {}
    for call in record.get("calls", []):
        question = ui.parse_review(call)
        if call["call_id"] == call_id and question.kind and question.always == choice:
            standing = dict(cl.user_session.get(ALWAYS) or {})
            standing[question.kind] = choice
            await persist(ALWAYS, standing)


async def answer_standing_choices(record: dict[str, Any]) -> None:
    """Answer the questions of a kind the reviewer always answers the same way in this chat."""
    standing = cl.user_session.get(ALWAYS) or {}
    for call in list(record["calls"]):
        question = ui.parse_review(call)
        choice = standing.get(question.kind or "")
        if choice and choice == question.always and cl.user_session.get(PENDING) is record:
            record.setdefault("standing", []).append(call["call_id"])
            await answer_review(record["response_id"], call["call_id"], choice)


def typed_answer_call(record: dict[str, Any] | None) -> str | None:
    """The first unanswered question of the pending review: typed text answers it."""
    for call in (record or {}).get("calls", []):
        if call["call_id"] not in record["answers"]:
            return str(call["call_id"])
    return None


# ---------------------------------------------------------------- chat events


@cl.on_message
async def on_message(message: cl.Message) -> None:
    if cl.user_session.get(MODEL) is None:
        try:
            await setup_chat()
        except APIConnectionError as exc:
            await show_unreachable(exc)
            return
    record = cl.user_session.get(PENDING)
    if record and record["response_id"] in answering:
        # The review's answer is on its way (the card was answered a moment ago, here or in
        # another tab): the text is not a second answer, and not a new run either.
        await cl.Message(content=BEING_ANSWERED).send()
        return
    call_id = typed_answer_call(record)
    if call_id:
        # While a review waits, typed text answers it: the graph accepts it as feedback or
        # refuses it with its own message (the card then asks again).
        await answer_review(record["response_id"], call_id, message.content, typed=True)
        return
    history = list(cl.user_session.get(HISTORY) or [])
    parts = [await attachment(element) for element in message.elements or []]
    history.append({"role": "user", "content": ui.user_content(message.content, parts)})
    await persist(HISTORY, history)
    await run_turn(history)


async def attachment(element: Element) -> dict[str, Any]:
    """A file attached to the message (Chainlit keeps it in the session's folder), as the
    input part that carries it to the graph. It stays in the history: later turns see it too."""
    if not element.path:
        raise RuntimeError(f"The attachment {element.name!r} has no file to read.")
    data = await asyncio.to_thread(Path(element.path).read_bytes)
    return ui.attachment_part(element.name, element.mime or "application/octet-stream", data)


@cl.on_stop
async def on_stop() -> None:
    """Stop: cancel the Response being polled or streamed, and show how it ended."""
    active = cl.user_session.get(ACTIVE)
    cl.user_session.set(ACTIVE, None)
    if not active:
        return
    await persist(POLLED, None)
    try:
        response = await client.responses.cancel(active["response_id"])
        status = response.status
    except APIStatusError as exc:
        # A foreground stream is not stored server-side; closing it (Chainlit cancels our task)
        # is what stops that run.
        cl.logger.info("cancel %s: %s", active["response_id"], exc.message)
        status = "cancelled"
    if active.get("status_message_id"):
        # Chainlit itself says "Task manually stopped."; the status line says how the run ended.
        elapsed = time.time() - (active.get("created_at") or time.time())
        content = ui.status_line(status, elapsed)
        await StatusLine(active["status_message_id"], content).update()


@cl.on_chat_resume
async def on_chat_resume(thread: dict[str, Any]) -> None:
    """A reload, a reconnect after a restart, or a thread picked from the history."""
    metadata = thread.get("metadata") or {}
    if isinstance(metadata, str):
        metadata = json.loads(metadata)
    cl.user_session.set(HISTORY, metadata.get(HISTORY) or [])
    cl.user_session.set(ALWAYS, metadata.get(ALWAYS) or {})
    try:
        await setup_chat(restored=metadata.get("chat_settings") or {})
    except APIConnectionError as exc:
        await show_unreachable(exc)
        return
    record = metadata.get(PENDING)
    cl.user_session.set(PENDING, record)
    polled = metadata.get(POLLED)
    cl.logger.info(
        "resumed thread %s, pending review: %s, polled run: %s",
        thread["id"],
        bool(record),
        bool(polled),
    )
    if record and record["response_id"] not in answering:
        # The cards come back from the data layer; one saved mid-send (the process that sent
        # it is gone) is offered again.
        record["answers"] = {}
        for call in record["calls"]:
            await update_card(record, call, state="pending")
    if polled:
        await resume_polling(polled)
