"""One `lgos serve` of the demo registry for the modules that call its graphs over MCP and A2A
(test_mcp_serve, test_mcp_tasks, test_mcp_scopes, test_a2a_serve): in-memory background runs,
owners named by the `x-tenant` header (requests without it share one owner, as with no header
configured). Each test reads only its own tasks and records, so none needs a fresh process.
test_a2a_contexts and test_mcp_conformance serve registries of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.processes import Process, clean_environment, serving

DEMO_REGISTRY = "demo.registry:create_registry"
SCOPE_HEADER = "x-tenant"


@pytest.fixture(scope="package")
def server() -> Iterator[Process]:
    env = clean_environment(LGOS_BACKGROUND="memory", LGOS_SCOPE_HEADER=SCOPE_HEADER)
    with serving([DEMO_REGISTRY, "--port", "0"], env) as process:
        yield process
