"""The `/v1` routes' request headers: looked up through a dict, with Starlette's answers."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lgos.http.headers import IndexedHeaders
from lgos.http.routes import Guarded

pytestmark = pytest.mark.timeout(30)

RAW_LISTS: list[list[tuple[bytes, bytes]]] = [
    [],
    [(b"content-type", b"application/json"), (b"content-length", b"12")],
    # Repeated names: the first one wins, as Starlette's `Headers[...]` gives.
    [(b"x-request-id", b"first"), (b"accept", b"*/*"), (b"x-request-id", b"second")],
    # Latin-1 values, and a name a server did not lowercase (never found, by either).
    [(b"x-note", "caf\u00e9".encode("latin-1")), (b"X-Upper", b"kept")],
]
NAMES = ["content-type", "Content-Type", "CONTENT-LENGTH", "x-request-id", "x-note", "x-upper"]
NAMES += ["X-Upper", "idempotency-key", "missing", ""]


@pytest.mark.parametrize("raw", RAW_LISTS)
def test_lookups_answer_as_starlette_does(raw: list[tuple[bytes, bytes]]) -> None:
    expected = Headers(scope={"headers": list(raw)})
    indexed = IndexedHeaders(scope={"headers": list(raw)})
    for name in NAMES:
        assert (name in indexed) == (name in expected), name
        assert indexed.get(name) == expected.get(name), name
        assert indexed.get(name, "fallback") == expected.get(name, "fallback"), name
        if name in expected:
            assert indexed[name] == expected[name], name
        else:
            with pytest.raises(KeyError):
                indexed[name]
    # What is not looked up by name stays Starlette's own.
    assert indexed.raw == expected.raw
    assert indexed.items() == expected.items()
    assert indexed.getlist("x-request-id") == expected.getlist("x-request-id")


@pytest.mark.anyio
async def test_a_route_reads_indexed_headers() -> None:
    seen: list[Headers] = []

    async def endpoint(request: Request) -> Response:
        seen.append(request.headers)
        return JSONResponse({"ok": True})

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/probe",
        "headers": [(b"x-request-id", b"abc-123"), (b"x-request-id", b"ignored")],
    }
    await Guarded(endpoint, "/v1/probe")(scope, receive, send)

    assert isinstance(seen[0], IndexedHeaders)
    start = sent[0]
    assert start["status"] == 200
    assert (b"x-request-id", b"abc-123") in start["headers"]
