"""A tiny project served by real `lgos serve` processes in the server tests."""
