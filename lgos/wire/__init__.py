"""OpenAI wire formats: request decoding and JSON/SSE encoding. Knows nothing of LangGraph
beyond the LangChain message types the runner consumes."""
