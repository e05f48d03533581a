"""Optional integrations, each behind its own extra (`lgos[postgres]`, `lgos[dbos]`, ...).

Nothing is imported here on purpose: `import lgos` must work with only the core dependencies,
so each integration module is imported by name, and only when it is configured.
"""
