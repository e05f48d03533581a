"""The house rules of `lgos/`, read from the code's own imports (every `import` statement,
function-level and TYPE_CHECKING ones included): imports point one way between layers, and no
module imports itself back through others. The layers and what each may import are read from
the table in docs/architecture.md, so the page and the rule cannot disagree."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "lgos"

ARCHITECTURE = LIBRARY.parent / "docs" / "architecture.md"
TABLE_HEADER = "| Layer | What lives there | May import |"
_NAMED = re.compile(r"`([a-z_]+)(?:/|\.py)`")


def _layer_name(token: str) -> str:
    return "front door" if token == "__init__" else token


def read_layer_table(text: str) -> dict[str, frozenset[str]]:
    """The layers of lgos/ and the layers each may import (besides itself), from the table in
    docs/architecture.md: the first column names the layer, the last lists what it may import as
    `layer/`; anything else in the cell is prose."""
    lines = text.splitlines()
    rows = lines[lines.index(TABLE_HEADER) + 2 :]
    table: dict[str, frozenset[str]] = {}
    for row in rows:
        if not row.startswith("|"):
            break
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        owner = _NAMED.fullmatch(cells[0])
        assert owner is not None, f"not a layer: {cells[0]}"
        table[_layer_name(owner.group(1))] = frozenset(
            _layer_name(name) for name in _NAMED.findall(cells[-1])
        )
    return table


MAY_IMPORT = read_layer_table(ARCHITECTURE.read_text())
# Third-party packages a layer must not import: the web framework stays out of the layers
# below HTTP, LangGraph out of the wire formats, and optional extras inside integrations/.
EXTRAS = frozenset({"psycopg", "psycopg_pool", "dbos", "hatchet_sdk", "langfuse", "sqlalchemy"})
WEB = frozenset({"fastapi", "starlette", "uvicorn"})
# The agent-protocol SDKs (extras too) stay inside protocols/.
AGENT_SDKS = frozenset({"mcp", "mcp_types", "a2a"})
FORBIDDEN: dict[str, frozenset[str]] = {
    "core": WEB | EXTRAS | AGENT_SDKS | {"openai"},
    "run": WEB | EXTRAS | AGENT_SDKS | {"openai"},
    "wire": WEB | EXTRAS | AGENT_SDKS | {"langgraph", "openai"},
    "service": WEB | EXTRAS | AGENT_SDKS | {"openai"},
    "background": WEB | EXTRAS | AGENT_SDKS | {"openai"},
    "protocols": EXTRAS | {"langgraph", "openai"},
    "http": EXTRAS | AGENT_SDKS | {"langgraph", "openai"},
    "integrations": WEB | AGENT_SDKS | {"openai"},
    "server": EXTRAS | AGENT_SDKS | {"openai"},
    "cli": EXTRAS | AGENT_SDKS | {"openai"},
    "front door": WEB | EXTRAS | AGENT_SDKS | {"openai"},
}


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_modules(root: Path) -> dict[str, Path]:
    return {module_name(root, path): path for path in sorted(root.rglob("*.py"))}


MODULES = read_modules(LIBRARY)


def layer(module: str) -> str:
    parts = module.split(".")
    return "front door" if len(parts) == 1 else parts[1]


def imports(module: str, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported name, line) for every import in the module; `from lgos.x import y` names
    `lgos.x.y` when that is a module, else `lgos.x`."""
    path = modules[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield (candidate if candidate in modules else base), node.lineno


def wrong_imports(module: str, modules: dict[str, Path]) -> list[str]:
    """Imports of `module` that point up, sideways into a forbidden layer, or at a package
    its layer must not use."""
    own = layer(module)
    found = []
    for name, line in imports(module, modules):
        top = name.split(".")[0]
        if top == "lgos":
            target = layer(name)
            if name == "lgos" and own != "front door":
                found.append(f"line {line}: imports the front door `lgos` itself")
            elif target != own and target not in MAY_IMPORT[own]:
                found.append(f"line {line}: {own} imports {name} ({target})")
        elif top in FORBIDDEN[own]:
            found.append(f"line {line}: {own} imports {name}")
    return found


def circles(modules: dict[str, Path]) -> list[list[str]]:
    graph = {
        module: {name for name, _ in imports(module, modules) if name in modules}
        for module in modules
    }
    found: list[list[str]] = []
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_the_layer_table_covers_every_module() -> None:
    assert {layer(module) for module in MODULES} <= set(MAY_IMPORT)


def test_the_layer_table_names_only_layers_it_has() -> None:
    """A misspelt layer in the doc's last column fails here instead of being ignored."""
    assert set().union(*MAY_IMPORT.values()) <= set(MAY_IMPORT)
    assert MAY_IMPORT["core"] == frozenset()
    assert MAY_IMPORT["front door"] >= {"server", "http"}


def test_the_layer_table_is_read_from_its_cells() -> None:
    page = "\n".join(
        [
            TABLE_HEADER,
            "| --- | --- | --- |",
            "| `core/` | types | No other layer (`x` is prose). |",
            "| `wire/` | formats | `core/` (knows OpenAI). |",
            "| `__init__.py` | the front door | `wire/`, `core/`. |",
            "",
            "| `ignored/` | after the table | `core/` |",
        ]
    )
    assert read_layer_table(page) == {
        "core": frozenset(),
        "wire": frozenset({"core"}),
        "front door": frozenset({"wire", "core"}),
    }


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    found = wrong_imports(module, MODULES)
    assert not found, f"{module}:\n" + "\n".join(found)


def test_no_import_circle() -> None:
    found = circles(MODULES)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_layers_form_no_circle_either() -> None:
    """The table itself: no layer may reach itself through the layers it imports."""

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(MAY_IMPORT[start])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(MAY_IMPORT[current])
        return seen

    assert [name for name in MAY_IMPORT if name in reachable(name)] == []


def test_the_checks_catch_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    """The checks above can fail: on a small tree with both faults, both are reported."""
    root = tmp_path / "lgos"
    for folder in ("core", "server", "wire"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "core" / "a.py").write_text("import fastapi\nfrom lgos.server import app\n")
    (root / "server" / "app.py").write_text("def f():\n    from lgos.core import a\n")
    (root / "wire" / "x.py").write_text("from . import y\n")
    (root / "wire" / "y.py").write_text("from lgos.wire.x import thing\n")
    modules = read_modules(root)
    assert wrong_imports("lgos.core.a", modules) == [
        "line 1: core imports fastapi",
        "line 2: core imports lgos.server.app (server)",
    ]
    assert wrong_imports("lgos.server.app", modules) == []
    assert sorted(circles(modules)) == [
        ["lgos.core.a", "lgos.server.app", "lgos.core.a"],
        ["lgos.wire.x", "lgos.wire.y", "lgos.wire.x"],
    ]


def test_the_demo_never_imports_the_tests() -> None:
    """`demo/` is what people copy into their own services; a copy must not need `tests/`."""
    demo = Path(__file__).resolve().parents[1] / "demo"
    offenders = [
        f"{path.relative_to(demo.parent)}: {line.strip()}"
        for path in sorted(demo.rglob("*.py"))
        if ".venv" not in path.parts
        for line in path.read_text().splitlines()
        if re.match(r"\s*(from|import)\s+tests(\.|\s|$)", line)
    ]
    assert offenders == []
