"""Every registry graph as an MCP tool, over Streamable HTTP (the official `mcp` SDK)."""

from lgos.protocols.mcp.server import McpEndpoint

__all__ = ["McpEndpoint"]
