"""Uvicorn's httptools protocol still has the hooks and attributes `LimitedHttpToolsProtocol`
relies on (lgos/server/uvicorn_internals.py): an upgrade that renames one fails here, not as
a server that silently stops enforcing its header limits."""

from __future__ import annotations

import asyncio
import inspect
import socket

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from lgos.server.protocol import LimitedHttpToolsProtocol
from lgos.server.uvicorn_internals import OVERRIDDEN_HOOKS, READ_ATTRIBUTES, HttpToolsProtocol

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("hook", sorted(OVERRIDDEN_HOOKS))
def test_every_overridden_hook_exists_with_its_parameters(hook: str) -> None:
    method = getattr(HttpToolsProtocol, hook)
    parameters = tuple(inspect.signature(method).parameters)
    assert parameters == ("self", *OVERRIDDEN_HOOKS[hook])
    # ... and LGOS's protocol really overrides it (the list is the one the subclass uses).
    assert hook in vars(LimitedHttpToolsProtocol)


async def test_the_attributes_read_are_set_by_uvicorn() -> None:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("no request is sent")

    protocol = HttpToolsProtocol(Config(app=app), ServerState(), {})
    ours, theirs = socket.socketpair()
    try:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock=ours)
        assert all(hasattr(protocol, name) for name in READ_ATTRIBUTES)
        assert protocol.loop is loop
        assert protocol.transport is transport
        transport.close()
    finally:
        theirs.close()
