"""The parts of Uvicorn (pinned: uvicorn 0.54.0) that LGOS uses although Uvicorn does not
document them, in one place. tests/internals/test_uvicorn.py checks each one's shape, so the
upgrade that changes one fails there first. docs/design-choices.md says why.

Uvicorn documents `--http` as taking an import path to a protocol class, but not the class
that `--http httptools` uses, nor its hooks: `LimitedHttpToolsProtocol` subclasses it,
overrides the hooks below (asyncio's protocol callbacks and httptools' parser callbacks,
plus Uvicorn's own 400 reply), and reads the attributes below.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["OVERRIDDEN_HOOKS", "READ_ATTRIBUTES", "HttpToolsProtocol"]

# Method name -> its parameters after `self`, as LimitedHttpToolsProtocol overrides it.
OVERRIDDEN_HOOKS: dict[str, tuple[str, ...]] = {
    "connection_made": ("transport",),
    "connection_lost": ("exc",),
    "data_received": ("data",),
    "on_message_begin": (),
    "on_headers_complete": (),
    "on_message_complete": (),
    "on_response_complete": (),
    "send_400_response": ("msg",),
}
# Instance attributes it reads: the event loop, and the transport the protocol writes to (set
# by `connection_made`).
READ_ATTRIBUTES = ("loop", "transport")
