"""The other agent protocols the same registry speaks (MCP), beside the OpenAI API."""
