"""Graph execution: knows LangGraph, nothing of HTTP or OpenAI JSON."""
