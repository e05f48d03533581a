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
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from pydantic import BaseModel, Field

log = logging.getLogger("lgos_pipe")

# Statuses after which a Response no longer changes.
TERMINAL = {"completed", "failed", "cancelled", "incomplete"}
# The function call name LGOS uses for a question the graph paused on.
INTERRUPT = "lgos_interrupt"

Emitter = Callable[[dict[str, Any]], Awaitable[Any]]


class LgosError(Exception):
    """An error envelope returned by LGOS (or the gateway), kept readable for the chat."""


def _content_text(content: Any) -> str:
    """Plain text of an Open WebUI chat message content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def to_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn Open WebUI's chat history into Responses input messages."""
    items = []
    for message in messages:
        role = message.get("role")
        if role in ("user", "assistant", "system", "developer"):
            items.append({"role": role, "content": _content_text(message.get("content"))})
    return items


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

    LGOS wants only those in ``metadata.lgos_settings``; a setting the selected graph does not
    declare is left out (user valves are shared by every graph of this manifold).
    """
    if not client_settings:
        return {}
    properties = (client_settings.get("json_schema") or {}).get("properties") or {}
    defaults = client_settings.get("defaults") or {}
    return {
        key: value
        for key, value in values.items()
        if key in properties and value is not None and value != defaults.get(key)
    }


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


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        code = f" ({error['code']})" if error.get("code") else ""
        return f"{error.get('message')}{code}"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}: {response.text[:500]}"


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

    class UserValves(BaseModel):
        """Per-user settings, shown in the chat's Controls panel under Valves."""

        run_in_background: bool = Field(
            default=False,
            description="Run graphs that support it in the background: the run survives a "
            "closed tab and Stop cancels it.",
        )
        # lgos-settings: begin
        # sync.py writes one optional field per graph setting here (None = the graph's default).
        # lgos-settings: end

    def __init__(self) -> None:
        self.type = "manifold"
        self.valves = self.Valves()

    def _client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.valves.api_key}"} if self.valves.api_key else {}
        return httpx.AsyncClient(
            base_url=self.valves.base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(self.valves.timeout_seconds, connect=10.0),
        )

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
        user_valves = (__user__ or {}).get("valves")
        metadata = __metadata__ or {}
        turn = _Turn(self.valves, model, user_valves, __event_emitter__, __event_call__)
        async with self._client() as client:
            turn.client = client
            texts = turn.run(to_input(body.get("messages") or []), metadata)
            try:
                async for text in texts:
                    yield text
            finally:
                # When Open WebUI closes this generator (Stop), close the inner one now, while
                # the HTTP client is still open, so that it can cancel its background run.
                await texts.aclose()


class _Turn:
    """One assistant turn: possibly several Responses (a review answer starts a new one)."""

    def __init__(
        self,
        valves: Pipe.Valves,
        model: str,
        user_valves: BaseModel | None,
        emit: Emitter | None,
        call: Callable[[dict[str, Any]], Awaitable[Any]] | None,
    ) -> None:
        self.valves = valves
        self.model = model
        self.user_valves = user_valves
        self._emit = emit
        self._call = call
        self.client: httpx.AsyncClient
        # The background Response being polled, cancelled if the user presses Stop.
        self.active_id: str | None = None

    async def status(self, description: str, done: bool = False) -> None:
        if self._emit:
            await self._emit({"type": "status", "data": {"description": description, "done": done}})

    async def run(
        self, input_items: list[dict[str, Any]], metadata: dict[str, Any]
    ) -> AsyncIterator[str]:
        try:
            info = await self._model_info()
            values = self.user_valves.model_dump() if self.user_valves else {}
            background = bool(values.pop("run_in_background", False)) and "background" in info.get(
                "features", []
            )
            request: dict[str, Any] = {"model": self.model, "input": input_items}
            request_metadata = {}
            if metadata.get("chat_id"):
                request_metadata["conversation_id"] = str(metadata["chat_id"])
            settings = changed_settings(values, info.get("client_settings"))
            if settings:
                request_metadata["lgos_settings"] = json.dumps(settings)
            if request_metadata:
                request["metadata"] = request_metadata

            while True:
                if background:
                    response = await self._run_in_background(request)
                    for text in answer_texts(response):
                        yield text
                else:
                    response = {}
                    async for text, final in self._stream(request):
                        if final is not None:
                            response = final
                        else:
                            yield text
                async for note in self._sources_and_outcome(response):
                    yield note
                calls = interrupt_calls(response)
                if not calls or response.get("status") != "completed":
                    return
                # The graph paused for review: ask in the browser, then resume with a new
                # Response that answers each question by its call_id.
                outputs = []
                for call in calls:
                    question, answer = await self._review(call)
                    yield f"\n\n> **Review:** {question}\n"
                    if answer is None:
                        yield "> _No answer sent: the review is still pending on the server._\n"
                        await self.status("Review left unanswered", done=True)
                        return
                    yield f"> **Your answer:** {answer}\n\n"
                    outputs.append(
                        {
                            "type": "function_call_output",
                            "call_id": call["call_id"],
                            "output": answer,
                        }
                    )
                request = {
                    **{k: v for k, v in request.items() if k != "input"},
                    "previous_response_id": response["id"],
                    "input": outputs,
                }
        except LgosError as exc:
            log.warning("LGOS request for %s failed: %s", self.model, exc)
            await self.status("Failed", done=True)
            yield f"\n\n**LGOS error:** {exc}"
        except httpx.HTTPError as exc:
            log.warning("LGOS at %s unreachable: %r", self.valves.base_url, exc)
            await self.status("Failed", done=True)
            yield f"\n\n**Could not reach LGOS at {self.valves.base_url}:** {exc}"
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

    async def _model_info(self) -> dict[str, Any]:
        """Features and per-request settings the model advertises (empty if it has none)."""
        response = await self.client.get(f"/models/{self.model}")
        if response.status_code != 200:
            raise LgosError(_error_message(response))
        info = response.json().get("lgos")
        if info is None:
            info = (await gateway_catalog(self.client)).get(self.model)
        return info or {}

    async def _run_in_background(self, request: dict[str, Any]) -> dict[str, Any]:
        """Create a background Response and poll it to a terminal status, with status events."""
        created = await self.client.post("/responses", json={**request, "background": True})
        if created.status_code != 200:
            raise LgosError(_error_message(created))
        response = created.json()
        self.active_id = response["id"]
        # The id stays in the status history: it is what an operator looks up on the server.
        await self.status(f"Started background run {response['id']}")
        polls = 0
        while response["status"] not in TERMINAL:
            label = "Queued" if response["status"] == "queued" else "Running"
            await self.status(
                f"{label} in the background ({polls * self.valves.poll_interval_seconds:.0f} s)"
            )
            await asyncio.sleep(self.valves.poll_interval_seconds)
            polls += 1
            polled = await self.client.get(f"/responses/{response['id']}")
            if polled.status_code != 200:
                raise LgosError(_error_message(polled))
            response = polled.json()
        self.active_id = None
        await self._commentary(response)
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
                raise LgosError(_error_message(http))
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
                    if item.get("type") == "message" and item.get("phase") == "commentary":
                        await self.status(" ".join(answer_texts_of_item(item)))
                elif kind in ("response.completed", "response.failed", "response.incomplete"):
                    yield "", event["response"]
                    return
                elif kind == "error":
                    raise LgosError(event.get("message") or json.dumps(event))
        raise LgosError("the stream ended without a terminal event")

    async def _commentary(self, response: dict[str, Any]) -> None:
        """Progress messages of a finished background run, as status lines."""
        for item in response.get("output") or []:
            if item.get("type") == "message" and item.get("phase") == "commentary":
                await self.status(" ".join(answer_texts_of_item(item)))

    async def _sources_and_outcome(self, response: dict[str, Any]) -> AsyncIterator[str]:
        """Citations as Open WebUI sources; failures and cancellations as readable text."""
        messages = [item for item in response.get("output") or [] if item.get("type") == "message"]
        for item in messages:
            for part in item.get("content") or []:
                for note in part.get("annotations") or []:
                    if note.get("type") == "url_citation" and self._emit:
                        title = note.get("title") or note["url"]
                        await self._emit(
                            {
                                "type": "source",
                                "data": {
                                    "source": {"name": title, "url": note["url"]},
                                    "document": [title],
                                    "metadata": [{"source": note["url"], "name": title}],
                                },
                            }
                        )
        status = response.get("status")
        if status == "completed":
            paused = bool(interrupt_calls(response))
            await self.status("Waiting for your review" if paused else "Done", done=not paused)
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

    async def _review(self, call: dict[str, Any]) -> tuple[str, str | None]:
        """Ask the user one review question in an Open WebUI dialog.

        Returns the question and the answer, or None when nothing should be sent (no browser
        session, or a free-text dialog was cancelled): the graph then stays paused.
        """
        try:
            args = json.loads(call.get("arguments") or "{}")
        except ValueError:
            args = {"question": call.get("arguments")}
        if not isinstance(args, dict):
            args = {"question": str(args)}
        question = str(args.get("question") or "The graph asks for your review.")
        choices = [str(choice) for choice in args.get("choices") or []]
        # The graph also takes free text (feedback) besides its choices.
        allow_other = bool(args.get("allow_other"))
        # Everything else the graph sent (e.g. the draft report) is shown in the dialog.
        details = "\n\n".join(
            f"**{key.capitalize()}:**\n\n{value}"
            for key, value in args.items()
            if key not in ("question", "choices", "allow_other")
        )
        await self.status("Waiting for your review")
        if self._call is None:
            return question, None

        by_lower = {choice.lower(): choice for choice in choices}
        if set(by_lower) == {"approve", "reject"} and not allow_other:
            # A yes/no review fits Open WebUI's confirmation dialog: Confirm approves and
            # Cancel (or Escape, or a click outside) rejects.
            result = await self._call(
                {
                    "type": "confirmation",
                    "data": {
                        "title": question,
                        "message": f"{details}\n\n**Confirm** approves, **Cancel** rejects.",
                    },
                }
            )
            if isinstance(result, dict):  # {"error": ...}: the browser session went away
                return question, None
            return question, by_lower["approve"] if result is True else by_lower["reject"]

        # Other questions: a select box over the graph's choices, or a text box (which also
        # takes one of the choices, typed).
        # An empty message would make Open WebUI show its generic "cannot be undone" text.
        hint = "**Cancel** sends nothing: the graph stays paused."
        data: dict[str, Any] = {"title": question, "placeholder": "Your answer"}
        if choices and not allow_other:
            data.update(type="select", options=choices, value=choices[0])
        elif choices:
            data["placeholder"] = f"{' or '.join(choices)}, or your own answer"
            hint = f"Type {' or '.join(f'**{c}**' for c in choices)}, or your own answer. {hint}"
        data["message"] = f"{details}\n\n{hint}" if details else hint
        result = await self._call({"type": "input", "data": data})
        if not isinstance(result, str) or not result.strip():
            return question, None
        return question, result.strip()

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
        except Exception as exc:
            log.warning("could not cancel %s: %s", response_id, exc)


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
