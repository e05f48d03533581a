"""The request as the `/v1` routes see it: Starlette's, with headers looked up by name in a dict.

Starlette's `Headers` scans the header list for every lookup, and a missing header (most
clients send no `x-request-id` or `Idempotency-Key`) scans all of it; `get` of a missing one
also raises and catches a `KeyError`. A foreground request looks up five names, so the list is
indexed once, when the headers are first asked for. Same answers: names compared lowercased,
the first of repeated headers wins (as `Headers[...]` gives), values decoded as Latin-1.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request


class IndexedHeaders(Headers):
    """Starlette's `Headers` of a request, with `[]`, `in` and `get` through a dict."""

    def __init__(
        self,
        headers: Mapping[str, str] | None = None,
        raw: list[tuple[bytes, bytes]] | None = None,
        scope: MutableMapping[str, Any] | None = None,
    ) -> None:
        if scope is not None and headers is None and raw is None:
            # What Starlette's `__init__` does for a scope, without its other cases' tests.
            self._list = scope["headers"] = list(scope["headers"])
        else:
            super().__init__(headers, raw, scope)
        # Built at once: every request looks up at least its `x-request-id`. Reversed: a name
        # seen again overwrites the later value, so the first one wins.
        self._index = dict(reversed(self._list))

    def __getitem__(self, key: str) -> str:
        value = self._index.get(key.lower().encode("latin-1"))
        if value is None:
            raise KeyError(key)
        return value.decode("latin-1")

    def __contains__(self, key: Any) -> bool:
        return key.lower().encode("latin-1") in self._index

    def get(self, key: str, default: Any = None) -> Any:
        value = self._index.get(key.lower().encode("latin-1"))
        return default if value is None else value.decode("latin-1")


class IndexedRequest(Request):
    """A Starlette `Request` whose `headers` are `IndexedHeaders`."""

    _indexed: IndexedHeaders | None = None

    @property
    def headers(self) -> Headers:
        headers = self._indexed
        if headers is None:
            headers = self._indexed = IndexedHeaders(scope=self.scope)
        return headers
