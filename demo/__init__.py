"""The reference deployment's demo graphs. Deterministic: no API key needed."""
