"""The request as the `/v1` routes see it: Starlette's, with headers looked up by name in a dict.

Starlette's `Headers` scans the header list for every lookup, and a missing header (most
clients send no `x-request-id` or `Idempotency-Key`) scans all of it; `get` of a missing one
also raises and catches a `KeyError`. A foreground request looks up five names, so the list is
indexed once, on the first lookup. Same answers: names compared lowercased, the first of
repeated headers wins (as `Headers[...]` gives), values decoded as Latin-1.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request


class IndexedHeaders(Headers):
    """Starlette's `Headers` of a request, with `[]`, `in` and `get` through a dict."""

    _index: dict[bytes, bytes] | None = None

    def _by_name(self) -> dict[bytes, bytes]:
        index = self._index
        if index is None:
            # Reversed: a name seen again overwrites the later value, so the first one wins.
            index = self._index = dict(reversed(self._list))
        return index

    def __getitem__(self, key: str) -> str:
        value = self._by_name().get(key.lower().encode("latin-1"))
        if value is None:
            raise KeyError(key)
        return value.decode("latin-1")

    def __contains__(self, key: Any) -> bool:
        return key.lower().encode("latin-1") in self._by_name()

    def get(self, key: str, default: Any = None) -> Any:
        value = self._by_name().get(key.lower().encode("latin-1"))
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
