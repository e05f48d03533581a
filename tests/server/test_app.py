"""`create_app` in-process: CORS, extension by a user, settings, log records."""

from __future__ import annotations

import asyncio
import hmac
import io
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from random import Random

import httpx2
import pytest
from fastapi import APIRouter, FastAPI
from openai import AsyncOpenAI, AuthenticationError
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from lgos import ConfigurationError, ServerSettings, create_app
from lgos.core import log_fields
from lgos.http import request_log
from lgos.server.logging import (
    _ENCODER,
    JSONFormatter,
    RequestContextFilter,
    StdoutHandler,
    _line,
    iso_timestamp,
    logging_config,
)
from tests.server.sample_app.registry import ANSWER, create_registry

pytestmark = pytest.mark.anyio

ORIGIN = "https://app.example.com"


def explicit_settings(**values: object) -> ServerSettings:
    defaults: dict[str, object] = {
        "POSTGRES_URI": None,
        "BACKGROUND": "none",
        "CORS_ORIGINS": [],
        "ENABLE_LANGFUSE": False,
    }
    return ServerSettings(**{**defaults, **values})  # type: ignore[arg-type]


@pytest.fixture
async def cors_http() -> AsyncIterator[httpx2.AsyncClient]:
    app = create_app(create_registry, settings=explicit_settings(CORS_ORIGINS=[ORIGIN]))
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http,
    ):
        yield http


async def test_cors_preflight_allows_configured_origins_only(
    cors_http: httpx2.AsyncClient,
) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    allowed = await cors_http.options(
        "/v1/chat/completions", headers={"Origin": ORIGIN, **preflight}
    )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in allowed.headers["access-control-allow-methods"]

    refused = await cors_http.options(
        "/v1/chat/completions", headers={"Origin": "https://evil.example", **preflight}
    )
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers

    listed = await cors_http.get("/v1/models", headers={"Origin": ORIGIN})
    assert listed.headers["access-control-allow-origin"] == ORIGIN
    assert "x-request-id" in listed.headers["access-control-expose-headers"].lower()


# --- A user's extension, as docs/server.md shows it -------------------------------------


class APIKeyMiddleware:
    """Pure ASGI (not BaseHTTPMiddleware), so streamed responses pass through untouched."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/v1/health":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = JSONResponse(
                    {
                        "error": {
                            "message": "Invalid API key.",
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "invalid_api_key",
                        }
                    },
                    status_code=401,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


router = APIRouter()


@router.get("/internal/models")
async def model_count() -> dict[str, int]:
    return {"models": 1}


def build_extended_app() -> FastAPI:
    app = create_app(create_registry, settings=explicit_settings())
    app.add_middleware(APIKeyMiddleware, api_key="secret-key")
    app.include_router(router)
    return app


@pytest.fixture
async def extended_http() -> AsyncIterator[httpx2.AsyncClient]:
    app = build_extended_app()
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http,
    ):
        yield http


def sdk(http: httpx2.AsyncClient, api_key: str) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url="http://t/v1",
        api_key=api_key,
        http_client=http,
        _strict_response_validation=True,
        max_retries=0,
    )


async def test_extended_app_checks_api_keys_and_serves_its_route(
    extended_http: httpx2.AsyncClient,
) -> None:
    with pytest.raises(AuthenticationError):
        await sdk(extended_http, "wrong").models.list()
    completion = await sdk(extended_http, "secret-key").chat.completions.create(
        model="sample", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == ANSWER
    models = await sdk(extended_http, "secret-key").models.list()
    assert [model.id for model in models.data] == ["sample"]

    denied = await extended_http.get("/internal/models")
    assert denied.status_code == 401
    route = await extended_http.get(
        "/internal/models", headers={"Authorization": "Bearer secret-key"}
    )
    assert route.json() == {"models": 1}
    assert (await extended_http.get("/v1/health")).status_code == 200


# --- Settings -------------------------------------------------------------------------------


def test_settings_errors_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LGOS_POSTGRES_POOL_SIZE", "0")
    with pytest.raises(ConfigurationError, match=r"^LGOS_POSTGRES_POOL_SIZE=0: "):
        ServerSettings.from_environment()
    monkeypatch.setenv("LGOS_POSTGRES_POOL_SIZE", "3")
    monkeypatch.setenv("LGOS_CORS_ORIGINS", "https://a.example")
    with pytest.raises(ConfigurationError, match=r"^LGOS_CORS_ORIGINS: expected a JSON list"):
        ServerSettings.from_environment()


def test_settings_read_json_lists_and_ignore_empty_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LGOS_CORS_ORIGINS", '["https://a.example", "https://b.example"]')
    monkeypatch.setenv("LGOS_POSTGRES_URI", "")
    monkeypatch.setenv("LGOS_BACKGROUND", "none")
    settings = ServerSettings.from_environment()
    assert settings.CORS_ORIGINS == ["https://a.example", "https://b.example"]
    assert settings.POSTGRES_URI is None
    # Explicit values win over the environment (what tests rely on).
    assert ServerSettings(BACKGROUND="memory").BACKGROUND == "memory"


def test_settings_reject_uri_errors_without_echoing_the_uri(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LGOS_POSTGRES_POOL_SIZE", "x")
    monkeypatch.setenv("LGOS_POSTGRES_URI", "postgresql://user:hunter2@db/app")
    with pytest.raises(ConfigurationError) as raised:
        ServerSettings.from_environment()
    assert "hunter2" not in str(raised.value)


# --- Log records ----------------------------------------------------------------------------


def test_request_fields_join_records_and_a_call_value_wins() -> None:
    formatter = JSONFormatter()
    stamp = RequestContextFilter()
    token = log_fields.bind(request_id="req-1", model="sample", stream=False)
    try:
        logger = logging.getLogger("sample_app.graph")
        # A graph node passing its own `model` must neither crash nor be overwritten.
        record = logger.makeRecord(
            logger.name,
            logging.INFO,
            __file__,
            1,
            "node.done",
            (),
            None,
            extra={"model": "inner-model"},
        )
        assert stamp.filter(record)
    finally:
        log_fields.reset(token)
    payload = json.loads(formatter.format(record))
    assert payload["request_id"] == "req-1"
    assert payload["model"] == "inner-model"
    assert payload["stream"] is False
    assert payload["logger"] == "sample_app.graph"


def _request_record_lines(
    stream: io.StringIO, *, extra_handler: logging.Handler | None, private: bool = True
) -> list[str]:
    """The request records one request writes through the handler `lgos serve` configures
    (set on the request logger itself here, so that pytest's own handlers stay out of it)."""
    configured = logging_config(json_output=True)["handlers"]["stdout"]["class"]
    assert configured == f"{StdoutHandler.__module__}.{StdoutHandler.__name__}"
    handler = StdoutHandler(stream)
    handler.setFormatter(JSONFormatter())
    handler.addFilter(RequestContextFilter())
    logger = request_log.logger
    saved = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addHandler(handler)
    if extra_handler is not None:
        logger.addHandler(extra_handler)
    # A field the record sets itself (it wins), one kept private, and a trace to stamp.
    token = log_fields.bind(
        request_id="req-7",
        model="sample",
        stream=False,
        **({"_hidden": 1} if private else {}),
        **{"http.route": "/x"},
    )
    span = NonRecordingSpan(SpanContext(trace_id=7, span_id=9, is_remote=False))
    attached = otel_context.attach(trace.set_span_in_context(span))
    try:
        request_log.log_request(
            "POST", "/v1/chat/completions", 200, time.perf_counter(), quiet=False
        )
    finally:
        otel_context.detach(attached)
        log_fields.reset(token)
        logger.removeHandler(handler)
        if extra_handler is not None:
            logger.removeHandler(extra_handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
    return stream.getvalue().splitlines()


def test_the_request_record_is_the_same_line_with_or_without_other_handlers() -> None:
    # Alone, `lgos serve`'s handler writes the request's record itself; beside another handler
    # (OpenTelemetry's, a host's) the record goes through the logging machinery, so both see it.
    class Kept(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    # Without the request fields filter the record would lack them: such a handler declines.
    unfiltered = StdoutHandler(io.StringIO())
    unfiltered.setFormatter(JSONFormatter())
    assert not unfiltered.write_fields(logging.INFO, "lgos.http.request", "http.request", {})

    lines = []
    for private in (True, False):  # a private field bound, or none
        kept = Kept()
        [direct] = _request_record_lines(io.StringIO(), extra_handler=None, private=private)
        [standard] = _request_record_lines(io.StringIO(), extra_handler=kept, private=private)
        [record] = kept.records
        assert record.getMessage() == "http.request"
        assert record.__dict__["request_id"] == "req-7"
        lines += [json.loads(direct), json.loads(standard)]
    for line in lines:
        assert line.pop("timestamp")
        assert line.pop("duration_ms") >= 0
    for line in lines[1:]:
        assert list(line.items()) == list(lines[0].items())
    assert lines[0] == {
        "level": "info",
        "logger": "lgos.http.request",
        "message": "http.request",
        "http.request.method": "POST",
        "http.route": "/v1/chat/completions",
        "http.response.status_code": 200,
        "request_id": "req-7",
        "model": "sample",
        "stream": False,
        "trace_id": f"{7:032x}",
        "span_id": f"{9:016x}",
    }


def test_record_timestamps_read_as_datetime_writes_them() -> None:
    # Records stamp the second's text once and add the microseconds: every value must read as
    # `isoformat` writes it, across a second's edges and the rounding that carries into the
    # next second, whatever order the records come in.
    second = float(int(time.time()))
    stamps = [second + offset / 1e6 for offset in range(-3, 4)]
    stamps += [second + 0.9999995, second + 0.9999994, second + 0.0000005, second + 0.0000015]
    stamps += [second + 0.5, second - 86_400.25, second + 1.0, second + 0.123456789]
    for created in [*stamps, *reversed(stamps)]:
        assert iso_timestamp(created) == datetime.fromtimestamp(created, UTC).isoformat()


def test_the_request_record_line_is_the_standard_encoders_character_for_character() -> None:
    # The request's record is encoded by orjson when that gives the same line: readers match
    # the lines as text (`"message": "worker.started"`), so every value a record can carry
    # must come out as the standard library writes it, or go to the standard library.
    texts = ["", "plain", 'quote " and \\', "comma, colon: ", "line\nbreak,\n  x", "é €", "\u2028"]
    values: list[object] = [*texts, 0, -7, 2**63, 2**70, True, False, None, [1, "a"], {"k": 1}]
    values += [0.0, -0.0, 3.4, 1e-4, 9.5e-5, 1e-5, 2.5e-7, 123456.7, 1e15, 1e16, 1.5e20]
    values += [float("nan"), float("inf"), object()]
    random = Random(23)
    payloads = [{"timestamp": "t", "value": value} for value in values]
    payloads += [{text: 1} for text in texts]
    for _ in range(2000):
        fields = range(random.randint(1, 12))
        payloads.append({random.choice(texts) + str(n): random.choice(values) for n in fields})
    for payload in payloads:
        assert _line(payload) == _ENCODER.encode(payload)


def test_logging_config_levels() -> None:
    config = logging_config(("sample_app",), json_output=True)
    assert config["root"]["level"] == "WARNING"
    assert config["loggers"]["sample_app"]["level"] == "INFO"
    assert config["loggers"]["lgos"]["level"] == "INFO"
    assert config["loggers"]["uvicorn.access"]["level"] == "INFO"
    assert config["handlers"]["stdout"]["formatter"] == "json"
    assert logging_config(json_output=False)["handlers"]["stdout"]["formatter"] == "console"


def test_logging_config_takes_the_chosen_level() -> None:
    quiet = logging_config(("sample_app",), json_output=True, level="WARNING")
    assert quiet["loggers"]["sample_app"]["level"] == "WARNING"
    assert quiet["loggers"]["lgos"]["level"] == "WARNING"
    assert quiet["root"]["level"] == "WARNING"
    # Lower: LGOS's loggers say more, other libraries still only warn.
    verbose = logging_config(json_output=True, level="DEBUG")
    assert verbose["loggers"]["lgos"]["level"] == "DEBUG"
    assert verbose["root"]["level"] == "WARNING"
    # Higher than WARNING: every library's warnings are left out too.
    assert logging_config(json_output=True, level="ERROR")["root"]["level"] == "ERROR"


async def test_api_at_the_root_leaves_mcp_and_a2a_reachable() -> None:
    # With the OpenAI API at "/", its catch-all would answer every path the router reached it
    # with; MCP and A2A must still be found, whatever the routes' order.
    app = create_app(create_registry, settings=explicit_settings(OPENAI_API_PREFIX="/"))
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http,
    ):
        card = await http.get("/a2a/sample/.well-known/agent-card.json")
        mcp = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"accept": "application/json, text/event-stream"},
        )
        unknown = await http.get("/no-such-path")
        models = await http.get("/models")
    assert card.status_code == 200
    assert card.json()["name"] == "sample"
    assert mcp.status_code != 404
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "Invalid URL (GET /no-such-path)"
    assert models.status_code == 200


# --- Reading the body -----------------------------------------------------------------------


async def _post_in_pieces(
    app: ASGIApp, pieces: list[bytes], *, stall: asyncio.Event | None = None
) -> tuple[int, bytes]:
    """A Chat Completions POST whose body reaches the app in `pieces`, each after the app asked
    for it (none with the head); with `stall`, the body stops coming after them until set."""
    body = b"".join(pieces)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"t"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    remaining = list(pieces)
    replied = asyncio.Event()

    async def receive() -> dict[str, object]:
        await asyncio.sleep(0)  # the app has to wait for every piece
        if remaining:
            piece = remaining.pop(0)
            more = bool(remaining) or stall is not None
            return {"type": "http.request", "body": piece, "more_body": more}
        if stall is not None:
            await stall.wait()
        await replied.wait()
        return {"type": "http.disconnect"}

    status = 0
    reply = bytearray()

    async def send(message: dict[str, object]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]  # type: ignore[assignment]
        elif message["type"] == "http.response.body":
            reply.extend(message.get("body", b""))  # type: ignore[arg-type]
            if not message.get("more_body"):
                replied.set()

    await app(scope, receive, send)  # type: ignore[arg-type]
    return status, bytes(reply)


async def test_a_body_that_arrives_in_late_pieces_is_read_whole() -> None:
    app = create_app(create_registry, settings=explicit_settings())
    body = json.dumps(
        {"model": "sample", "messages": [{"role": "user", "content": "Hello"}]}
    ).encode()
    async with app.router.lifespan_context(app):
        status, reply = await _post_in_pieces(app, [body[:10], body[10:30], body[30:]])
    assert status == 200, reply
    assert json.loads(reply)["choices"][0]["message"]["content"] == ANSWER


async def test_a_body_that_stops_coming_gets_a_408_after_the_body_timeout() -> None:
    app = create_app(create_registry, settings=explicit_settings(BODY_TIMEOUT_SECONDS=0.2))
    stall = asyncio.Event()
    async with app.router.lifespan_context(app):
        status, reply = await _post_in_pieces(app, [b'{"model": "sam'], stall=stall)
    stall.set()
    assert status == 408, reply
    assert json.loads(reply)["error"]["code"] == "request_timeout"


async def test_serve_freezes_what_start_up_left_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lgos serve`'s app moves the objects alive after start-up out of the garbage collector's
    sight (`gc.freeze`), so that full collections do not walk them again (docs/benchmarks.md);
    an app built with `create_app` alone leaves the collector as it is."""
    import gc

    from lgos.server import app as server_app

    made: list[dict[str, object]] = []
    real_create_app = server_app.create_app

    def recording_create_app(*args: object, **kwargs: object) -> object:
        made.append(kwargs)
        return real_create_app(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(server_app, "create_app", recording_create_app)
    monkeypatch.setenv("LGOS_REGISTRY", "tests.server.sample_app.registry:create_registry")
    monkeypatch.setenv("LGOS_BACKGROUND", "none")
    monkeypatch.delenv("LGOS_POSTGRES_URI", raising=False)
    server_app.app_from_environment()
    assert made[0]["freeze_startup_objects"] is True

    gc.unfreeze()
    try:
        plain = create_app(create_registry, settings=explicit_settings())
        async with plain.router.lifespan_context(plain):
            assert gc.get_freeze_count() == 0
        frozen = create_app(
            create_registry, settings=explicit_settings(), freeze_startup_objects=True
        )
        async with frozen.router.lifespan_context(frozen):
            assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
