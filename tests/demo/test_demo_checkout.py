"""What `just demo/...` keeps per checkout, forgets on reset-db, and says about Hatchet.

Each test copies demo/justfile (and the scripts a recipe calls) into a temporary checkout, so it
never touches the real one's databases or a stack someone runs there; the databases it makes
on the machine's PostgreSQL are dropped at the end. The Hatchet test starts the real engine
(the build `just setup` made) on free ports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import hatchet
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"

pytestmark = pytest.mark.skipif(
    shutil.which("just") is None or shutil.which("psql") is None, reason="needs just and psql"
)


def psql(sql: str) -> list[str]:
    done = subprocess.run(
        ["psql", PG_ADMIN, "-tAc", sql], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()


def databases() -> set[str]:
    return set(psql("SELECT datname FROM pg_database"))


def make_checkout(folder: Path) -> Path:
    """A checkout with what the demo recipes run: the justfile and the Hatchet scripts."""
    (folder / "demo").mkdir(parents=True)
    shutil.copy(ROOT / "demo" / "justfile", folder / "demo" / "justfile")
    (folder / "scripts").mkdir()
    for script in ("hatchet-bootstrap.sh", "setup-hatchet.sh"):
        shutil.copy(ROOT / "scripts" / script, folder / "scripts" / script)
    # LiteLLM's environment is not what these tests look at: `up` finds it ready.
    (folder / "demo" / "litellm").mkdir()
    (folder / "demo" / "litellm" / "setup.sh").write_text("exit 0\n")
    return folder


# Variables that move the demo's databases, ports or engine: a fresh shell has none of them.
SETTINGS = re.compile(r"^(DEMO_|LGOS_|HATCHET_|CHAINLIT_|OPENWEBUI_|LITELLM_|DATABASE_URL$)")


def shell(**settings: str) -> dict[str, str]:
    """This environment as a fresh shell has it, plus the given settings."""
    return {k: v for k, v in os.environ.items() if not SETTINGS.match(k)} | settings


def just(checkout: Path, *args: str, env: dict[str, str], timeout: float = 120):
    return subprocess.run(
        ["just", "--justfile", str(checkout / "demo" / "justfile"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def evaluate(checkout: Path, name: str, env: dict[str, str]) -> str:
    done = just(checkout, "--evaluate", name, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def status_rows(checkout: Path, env: dict[str, str]) -> dict[str, list[str]]:
    done = just(checkout, "status", env=env)
    rows = {}
    for line in done.stdout.splitlines()[1:]:
        name, *cells = re.split(r"\s{2,}", line.rstrip())
        rows[name] = cells
    return rows


@pytest.fixture
def checkouts(tmp_path: Path) -> Iterator[list[Path]]:
    """Two checkouts of the repository, and the databases they make dropped afterwards: those
    named for either checkout (its database, and the engine's and Chainlit's after it), never
    another test's, which `just test` may be making in another lane meanwhile."""
    made = [make_checkout(tmp_path / "one" / "lgos"), make_checkout(tmp_path / "two" / "lgos")]
    own = [evaluate(checkout, "db_name", shell()) for checkout in made]
    before = databases()
    yield made
    for name in databases() - before:
        if any(name == prefix or name.startswith(f"{prefix}_") for prefix in own):
            psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.timeout(300)
def test_two_checkouts_never_share_the_demos_databases(checkouts: list[Path]) -> None:
    env = shell(LGOS_BACKGROUND="dbos")
    names = []
    for checkout in checkouts:
        # `just demo/status` names the database this checkout uses...
        row = status_rows(checkout, env)["postgres"]
        shown = re.fullmatch(r"127\.0\.0\.1:5432 \((\w+)\)", row[2])
        assert shown, row
        names.append(shown[1])
    assert names[0] != names[1], names
    for checkout, name in zip(checkouts, names, strict=True):
        assert name.startswith("lgos_demo_"), name
        # ...and the API, the engine and Chainlit each have their own, under that name.
        assert evaluate(checkout, "pg_uri", env).endswith(f"/{name}")
        assert evaluate(checkout, "hatchet_db", env) == f"{name}_hatchet"
        assert evaluate(checkout, "chainlit_db", env).endswith(f"/{name}_chainlit")
        made = just(checkout, "db", env=env)
        assert made.returncode == 0, made.stderr
    assert set(names) <= databases()


@pytest.mark.timeout(300)
def test_reset_db_forgets_what_both_uis_keep(checkouts: list[Path]) -> None:
    checkout = checkouts[0]
    env = shell(LGOS_BACKGROUND="dbos")
    for recipe in ("db", "hatchet-db"):
        made = just(checkout, recipe, env=env)
        assert made.returncode == 0, made.stderr
    # Chainlit's database as its launcher makes it (its threads and their pending reviews).
    chainlit_db = evaluate(checkout, "chainlit_db", env)
    python = ROOT / "demo" / "chainlit" / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("the Chainlit environment is not built (just setup)")
    subprocess.run(
        [str(python), str(ROOT / "demo" / "chainlit" / "setup_db.py"), chainlit_db],
        check=True,
        timeout=120,
    )
    # Open WebUI's data folder (its database, the LGOS Pipe's waiting reviews) and the local
    # engine's state, as a stack leaves them.
    owui = checkout / "demo" / "openwebui" / ".data"
    owui.mkdir(parents=True)
    (owui / "webui.db").write_bytes(b"")
    (owui / "lgos_pending_reviews.json").write_text('{"http://127.0.0.1:4000/v1 c1": {}}')
    (checkout / "demo" / ".run" / "hatchet").mkdir(parents=True)
    (checkout / "demo" / ".run" / "hatchet.env").write_text("HATCHET_CLIENT_TOKEN=ey\n")
    kept = {
        evaluate(checkout, "db_name", env),
        evaluate(checkout, "hatchet_db", env),
        chainlit_db.rsplit("/", 1)[1],
    }
    assert kept <= databases()

    reset = just(checkout, "reset-db", env=env)
    assert reset.returncode == 0, reset.stderr
    assert kept & databases() == set()
    assert not owui.exists()
    assert not (checkout / "demo" / ".run" / "hatchet").exists()
    assert not (checkout / "demo" / ".run" / "hatchet.env").exists()


@pytest.mark.timeout(120)
def test_chainlit_started_alone_uses_the_checkouts_database(checkouts: list[Path]) -> None:
    urls = []
    for checkout in checkouts:
        # run.sh as `bash demo/chainlit/run.sh` runs it, with stand-ins for its environment:
        # the database step and Chainlit itself say which database they were given.
        chainlit = checkout / "demo" / "chainlit"
        (chainlit / ".venv" / "bin").mkdir(parents=True)
        shutil.copy(ROOT / "demo" / "chainlit" / "run.sh", chainlit / "run.sh")
        stand_ins = {
            chainlit / "setup.sh": "exit 0",
            **{
                chainlit / ".venv" / "bin" / name: f'echo "{name} $DATABASE_URL"'
                for name in ("python", "chainlit")
            },
        }
        for path, script in stand_ins.items():
            path.write_text(f"#!/bin/sh\n{script}\n")
            path.chmod(0o755)
        env = shell(CHAINLIT_AUTH_SECRET="test-only")
        done = subprocess.run(
            ["bash", str(chainlit / "run.sh")], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        # The same database `just demo/chainlit` gives it: this checkout's, not a shared one.
        expected = evaluate(checkout, "chainlit_db", env)
        assert done.stdout.splitlines() == [f"python {expected}", f"chainlit {expected}"]
        urls.append(expected)
    assert urls[0] != urls[1], urls


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_up_shows_the_local_engine_as_what_it_serves(checkouts: list[Path], alive: int) -> None:
    if not (hatchet.bin_dir() / "hatchet-lite").exists():
        pytest.skip("the Hatchet engine is not built (just setup needs Go)")
    checkout = checkouts[0]
    (checkout / ".cache").mkdir()
    (checkout / ".cache" / "hatchet").symlink_to(ROOT / ".cache" / "hatchet")
    ports = {name: str(free_port()) for name in ("UI", "GRPC", "API", "FRONTEND", "HEALTH")}
    env = shell(
        LGOS_BACKGROUND="hatchet",
        **{f"HATCHET_{name}_PORT": port for name, port in ports.items()},
    )
    # API, worker and LiteLLM already run (stand-ins): `up` lists them and starts only the engine.
    run = checkout / "demo" / ".run"
    run.mkdir(parents=True)
    for name in ("api", "worker", "litellm"):
        (run / f"{name}.pid").write_text(str(alive))
    try:
        up = just(checkout, "up", "--ui=false", env=env, timeout=500)
        assert up.returncode == 0, up.stdout + up.stderr
        ui = f"http://127.0.0.1:{ports['UI']}"
        # What the engine serves on its UI port here: the bootstrap's placeholder page, which
        # has no login, and the REST API.
        with urllib.request.urlopen(f"{ui}/", timeout=30) as page:
            assert "not built on this machine" in page.read().decode()
        with urllib.request.urlopen(f"{ui}/api/ready", timeout=30) as ready:
            assert ready.status == 200
        # So `up` prints no credentials, and its table's row says what is there.
        assert "Admin123" not in up.stdout, up.stdout
        assert "admin@example.com" not in up.stdout, up.stdout
        rows = {}
        for line in up.stdout.splitlines():
            cells = re.split(r"\s{2,}", line.rstrip())
            rows.setdefault(cells[0], cells[1:])
        url, login, state = rows["hatchet"]
        assert url == f"http://localhost:{ports['UI']}/api"
        assert login == "- (REST API; no web UI built here)"
        assert state == "ready"
    finally:
        for name in ("api", "worker", "litellm"):
            (run / f"{name}.pid").unlink()
        down = just(checkout, "hatchet-down", env=env, timeout=120)
        assert down.returncode == 0, down.stderr
