"""Refusing browser pages of other sites on the agent-protocol endpoints (MCP, A2A).

Agent clients are programs (gateways, chat UIs' back ends, other agents) and send no `Origin`;
a browser does, and a page of another site that reached this server through a rebound DNS name
would otherwise drive its graphs. Allowed: no Origin, a loopback origin, and the server's CORS
origins (LGOS_CORS_ORIGINS). The refusal is a JSON-RPC error, as both protocols speak it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# JSON-RPC's "Invalid Request".
INVALID_REQUEST = -32600


class OriginGuard:
    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = Headers(scope=scope).get("origin")
        if scope["type"] == "http" and origin is not None and not self._allows(origin):
            body = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": INVALID_REQUEST, "message": "Origin not allowed."},
            }
            await JSONResponse(body, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allows(self, origin: str) -> bool:
        if origin in self.allowed or "*" in self.allowed:
            return True
        host = urlsplit(origin).hostname
        return host in LOOPBACK_HOSTS
