"""HTTP: FastAPI routes, request context and error envelopes."""
