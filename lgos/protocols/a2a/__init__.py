"""Every registry graph as an A2A agent, over JSON-RPC (the official `a2a-sdk`)."""

from lgos.protocols.a2a.server import A2aEndpoint

__all__ = ["A2aEndpoint"]
