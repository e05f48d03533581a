"""The domain types every layer shares: requests and tools, run events, errors, the registry,
client settings, the run coordinator and background engine contracts, request log fields.

The bottom layer: it imports no other part of LGOS, only the standard library, Pydantic and
the LangChain/LangGraph types the domain is made of.
"""
