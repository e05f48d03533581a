"""Hosting: settings, resources, the application `lgos serve` runs, the worker, logging.

The names a host imports are re-exported by the front door, `lgos`, and only there."""

from typing import NoReturn

_MOVED = frozenset({"ServerResources", "ServerSettings", "create_app", "RegistryFactory"})


def __getattr__(name: str) -> NoReturn:
    # `from lgos.server import ServerSettings` worked before the front door was the only one;
    # such code gets the fix in the error instead of a bare "cannot import name".
    if name in _MOVED:
        raise ImportError(
            f"lgos.server.{name} is imported from the front door: from lgos import {name}"
        )
    raise AttributeError(f"module 'lgos.server' has no attribute {name!r}")
