"""The part of LangChain (pinned: langchain-core 1.8.3) that LGOS uses beyond its documented
contract, in one place. tests/internals/test_langchain.py checks it, so the upgrade that changes
it fails there first. docs/design-choices.md says why.

`register_configure_hook` is typed to take a context variable, but LangChain only ever calls
its `get()`, once each time it configures a callback manager (twice when that returns a
handler, which it then adds). A function read there instead decides per manager.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

__all__ = ["register_configure_reader"]


class _Reader:
    """Reads like a context variable to LangChain's configure hook."""

    __slots__ = ("_read",)

    def __init__(self, read: Callable[[], BaseCallbackHandler | None]) -> None:
        self._read = read

    def get(self, default: None = None) -> BaseCallbackHandler | None:
        return self._read()


def register_configure_reader(
    read: Callable[[], BaseCallbackHandler | None], *, inheritable: bool
) -> None:
    """`register_configure_hook` with `read` in place of its context variable: LangChain adds
    the handler `read()` returns (None: none) to each callback manager it configures."""
    register_configure_hook(cast("ContextVar[Any]", _Reader(read)), inheritable)
