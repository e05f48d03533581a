"""`import lgos` needs only the core dependencies; integrations load only when used."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Starts real processes: slower than the suite-wide timeout on a busy host.
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[1]
OPTIONAL = ("langgraph.checkpoint.postgres", "psycopg", "dbos", "hatchet_sdk", "langfuse")


def test_importing_lgos_loads_no_integration() -> None:
    probe = (
        "import sys, lgos, lgos.server, lgos.cli; "
        f"print(sorted(m for m in {OPTIONAL!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert result.stdout.strip() == "[]"


def test_every_public_name_resolves() -> None:
    """The front door imports lazily: every name it lists is one it can import."""
    import lgos

    assert sorted(lgos.__all__) == sorted(lgos._EXPORTS)
    missing = [name for name in lgos.__all__ if getattr(lgos, name, None) is None]
    assert missing == []
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        lgos.nothing_here  # noqa: B018


def test_the_core_install_serves_without_extras(tmp_path: Path) -> None:
    """A venv with `lgos` and its core dependencies only imports and builds the app."""
    uv = shutil.which("uv")
    assert uv is not None, "uv is installed by the project's set-up"
    venv = tmp_path / "core"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(python), str(REPO)], check=True
    )
    probe = (
        "import importlib.util as u; "
        f"missing = [m for m in {OPTIONAL!r} if u.find_spec(m) is None]; "
        "from lgos import ServerSettings, create_app; "
        "app = create_app('demo.registry:create_registry', settings=ServerSettings("
        "POSTGRES_URI=None, BACKGROUND='memory')); "
        "print(len(missing), type(app).__name__)"
    )
    result = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    # Every optional integration is absent, and the app still builds.
    assert result.stdout.strip() == f"{len(OPTIONAL)} FastAPI"
