"""Benchmarks: LGOS against a bare FastAPI app and the reference product, side by side."""
