"""Who is asking: the one authentication hook, and the two forms LGOS ships.

An `Authenticate` takes the request and returns the owner it acts as, or raises an `LgosError`
(`AuthenticationError` for a 401, `PermissionDeniedError` for a 403). It runs before a route
reads the body, on every route but the health check (and the model listing, when that is
public). The owner it returns scopes every object the request reaches: stored Responses,
Conversations, pauses, background runs, MCP and A2A tasks, Idempotency-Keys. Another owner's
object is answered exactly as an unknown one.

`ApiKeys` (`LGOS_API_KEYS`), `TrustedHeader` (`LGOS_SCOPE_HEADER`) and `GatewayUsers` (both: a
gateway's key, and the user it names) are three such hooks; a host passes its own (a JWT check,
say) to `create_app` or `LanggraphOpenaiServe`.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from lgos.core.errors import AuthenticationError, ConfigurationError, LgosError
from lgos.http.errors import lgos_error_response

Authenticate = Callable[[Request], Awaitable[str]]
# The older, synchronous-or-not form (`owner_scope=`): same idea, no refusals expected.
OwnerScopeResolver = Callable[[Request], str | Awaitable[str]]

# The owner of a request once authenticated, in the ASGI scope's state (read by `owner_of`).
OWNER_STATE: Final = "lgos_owner"
# The owner of every request when the host authenticates nobody.
SHARED_OWNER_SCOPE: Final = "default"
# Between a key's owner and the user its holder names (`GatewayUsers`).
USER_SEPARATOR: Final = "/"

MISSING_KEY = (
    "You didn't provide an API key. Send it in the Authorization header as "
    "'Authorization: Bearer YOUR_KEY'."
)
WRONG_KEY = "Incorrect API key provided."


def owner_of(request: Request) -> str:
    """The owner the request was authenticated as (the shared one when nobody is)."""
    state = request.scope.get("state") or {}
    owner = state.get(OWNER_STATE, SHARED_OWNER_SCOPE)
    assert isinstance(owner, str)
    return owner


async def authenticate_into_scope(authenticate: Authenticate, request: Request) -> None:
    """Run the hook and keep its owner for the route; its LgosError passes to the caller."""
    owner = await authenticate(request)
    if not isinstance(owner, str) or not owner:
        # A host's hook that returns nothing must not let the request through as "nobody".
        raise TypeError(f"authenticate returned {type(owner).__name__}, not a non-empty str")
    request.scope.setdefault("state", {})[OWNER_STATE] = owner


def as_authenticate(resolver: OwnerScopeResolver) -> Authenticate:
    """An `owner_scope` resolver (which may answer without awaiting) as an `Authenticate`."""

    async def authenticate(request: Request) -> str:
        owner = resolver(request)
        return await owner if inspect.isawaitable(owner) else owner

    return authenticate


class AuthenticationGate:
    """The hook in front of a whole ASGI app (the MCP endpoint, an A2A agent): a refusal is
    the OpenAI error envelope with its status, as on the OpenAI routes."""

    def __init__(self, app: ASGIApp, authenticate: Authenticate) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                await authenticate_into_scope(self.authenticate, Request(scope, receive))
            except LgosError as error:
                await lgos_error_response(error)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bearer_token(request: Request) -> str | None:
    """The token of `Authorization: Bearer <token>` (the scheme in any case), or None."""
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class ApiKeys:
    """Bearer keys, each acting as one owner (`{key: owner}`).

    Only the keys' SHA-256 digests are kept, and a presented key is compared with every one of
    them in constant time: equal-length digests, no early exit, so neither a key's length nor
    how much of it matched shows in the time of a reply.
    """

    def __init__(self, keys: Mapping[str, str]) -> None:
        if not keys:
            raise ConfigurationError("no API keys given")
        for key, owner in keys.items():
            if not key or not owner:
                raise ConfigurationError("every API key needs a non-empty key and owner")
        self._digests = [(_digest(key), owner) for key, owner in keys.items()]

    @classmethod
    def parse(cls, text: str, *, source: str) -> ApiKeys:
        """`owner=key` entries, one per line or comma-separated; `#` starts a comment line.
        An error names the entry by its position, never by its text (it holds a key)."""
        keys: dict[str, str] = {}
        entries = [
            entry.strip()
            for line in text.splitlines()
            if not line.lstrip().startswith("#")
            for entry in line.split(",")
        ]
        for position, entry in enumerate((entry for entry in entries if entry), start=1):
            owner, equals, key = entry.partition("=")
            owner, key = owner.strip(), key.strip()
            if not equals or not owner or not key:
                raise ConfigurationError(f"{source}: entry {position} is not 'owner=key'")
            if key in keys:
                raise ConfigurationError(f"{source}: entry {position} repeats a key")
            keys[key] = owner
        if not keys:
            raise ConfigurationError(f"{source}: no 'owner=key' entry")
        return cls(keys)

    @property
    def owners(self) -> frozenset[str]:
        return frozenset(owner for _, owner in self._digests)

    async def __call__(self, request: Request) -> str:
        presented = bearer_token(request)
        if presented is None:
            raise AuthenticationError(MISSING_KEY)
        digest = _digest(presented)
        found: str | None = None
        for known, owner in self._digests:
            if hmac.compare_digest(known, digest):
                found = owner
        if found is None:
            raise AuthenticationError(WRONG_KEY)
        return found


class TrustedHeader:
    """The owner a trusted gateway names in `header` (which it must strip from what clients
    send); requests without it share one owner. It authenticates nobody by itself."""

    def __init__(self, header: str, default: str = SHARED_OWNER_SCOPE) -> None:
        self.header = header
        self.default = default

    async def __call__(self, request: Request) -> str:
        return request.headers.get(self.header) or self.default


class GatewayUsers:
    """A key held by a gateway, and the user the gateway names in `header`.

    The key authenticates the gateway; the owner is the named user under the key's owner
    (`<key owner>/<user>`), so a holder of any other key can never name the same owner, and
    a request without the header acts as the key's owner itself. Whoever holds the key speaks
    for all of its users: the gateway must set the header from its own sign-in and strip any
    copy a client sent (docs/security.md, "A gateway's users").
    """

    def __init__(self, keys: ApiKeys, header: str) -> None:
        if any(USER_SEPARATOR in owner for owner in keys.owners):
            # "a/b" as a key's owner would be the user b of the key owner a.
            raise ConfigurationError(
                f"with a user header, no API key's owner may contain '{USER_SEPARATOR}'"
            )
        self.keys = keys
        self.header = header

    async def __call__(self, request: Request) -> str:
        owner = await self.keys(request)
        user = request.headers.get(self.header)
        return f"{owner}{USER_SEPARATOR}{user}" if user else owner
