"""A project rendered from the template, as docs/start-your-own-service.md says for a local
clone: its Dockerfile built and its compose file run under a real Docker engine.

Runs with `just demo/test-compose --all` (LGOS_TEST_COMPOSE=1 LGOS_COMPOSE_ALL=1). The project
is rendered from this checkout (so it installs this checkout's LGOS from its vendor/ wheel),
with Python 3.11, the version of the python stand-in where no registry answers. Both profiles
run. The hatchet profile pins hatchet-lite v0.107.1, newer than the Go module proxy serves these
machines: where no registry answers it runs on the repo's v0.105.0 stand-in instead, through the
template's own HATCHET_IMAGE variable (docs/deployment/compose.md, "Seen running").
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.started import StartFailure, require, start_once

from . import images, prepare
from .prepare import FULL, NOT_OPTED_IN, OPTED_IN
from .stack import REPO, Stack, log
from .test_stack import running_or_failure, show_progress

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900, func_only=True)]
# What the template's compose file calls each upstream image, and the repo's variable for it.
IMAGE_VARIABLES = {
    "PYTHON_IMAGE": "DEMO_PYTHON_IMAGE",
    "POSTGRES_IMAGE": "DEMO_POSTGRES_IMAGE",
    "HATCHET_IMAGE": "DEMO_HATCHET_IMAGE",
}
# profile -> the services to start (their dependencies come along).
PROFILES = {"dbos": ["api-dbos", "worker-dbos"], "hatchet": ["api", "worker"]}


def render(output: Path) -> Path:
    """`cookiecutter <this checkout> --directory template`, the defaults but Python 3.11."""
    command = [sys.executable, "-m", "cookiecutter", str(REPO), "--directory", "template"]
    command += ["--no-input", "--output-dir", str(output), "python_version=3.11"]
    config = output.parent / "cookiecutter-config.yaml"  # clones and replays stay in tmp
    config.write_text(
        f'replay_dir: "{output.parent / "replay"}"\ncookiecutters_dir: "{output.parent / "cc"}"\n'
    )
    ours = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")  # the project must use its own environment
    env = {key: value for key, value in os.environ.items() if key not in ours}
    done = subprocess.run(
        [*command, "--config-file", str(config)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise RuntimeError(f"rendering the template failed:\n{done.stdout}{done.stderr}")
    [root] = [path for path in output.iterdir() if (path / "compose.yaml").is_file()]
    return root


@pytest.fixture(scope="module", params=list(PROFILES))
def template_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack | StartFailure]:
    profile: str = request.param
    if not OPTED_IN:
        pytest.skip(NOT_OPTED_IN)
    if not FULL:
        pytest.skip("the template's compose runs with `just demo/test-compose --all`")
    show_progress(request)
    # The engine and images, made since the end of collection (prepare.py).
    ready = prepare.ready()
    if isinstance(ready, StartFailure):
        yield ready
        return
    host = ready.host
    if host is None:
        pytest.skip("no Docker engine answers (scripts/setup-docker.sh says why)")
    os.environ["DOCKER_HOST"] = host
    images.docker_host = host

    def prepared() -> Stack:
        variables = images.ensure(full=False)
        root = render(tmp_path_factory.mktemp("template"))
        log(f"rendered the template into {root.name}/ (LGOS from {root.name}/vendor/)")
        return Stack(
            directory=root,
            profiles=[profile],
            services=PROFILES[profile],
            workdir=tmp_path_factory.mktemp("template-compose"),
            variables={
                ours: variables[theirs]
                for ours, theirs in IMAGE_VARIABLES.items()
                if theirs in variables
            },
            host=host,
            port_variables=("API_PORT", "POSTGRES_PORT", "HATCHET_UI_PORT"),
        )

    stack = start_once(f"the template's project ({profile} profile)", prepared)
    if isinstance(stack, StartFailure):
        yield stack
        return
    with running_or_failure(stack, f"the template's compose stack ({profile} profile)") as started:
        yield started


def example(stack: Stack, name: str, *args: str) -> str:
    """One of the project's own example clients, run against the compose port."""
    done = subprocess.run(
        ["uv", "run", "--locked", "python", f"examples/{name}.py", *args],
        cwd=stack.directory,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **{k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
            "OPENAI_BASE_URL": stack.url("API_PORT"),
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    log(f"examples/{name}.py against the template's stack: {done.stdout.strip()[-200:]!r}")
    return done.stdout


def test_the_template_stack_answers_its_examples(template_stack: Stack | StartFailure) -> None:
    stack = require(template_stack)
    assert example(stack, "responses", "What can you do?").strip()
    background = example(stack, "background", "Summarise the week")
    assert ": completed" in background, background


def test_every_template_service_is_healthy(template_stack: Stack | StartFailure) -> None:
    stack = require(template_stack)
    states = stack.states()
    assert set(stack.services) <= set(states)
    jobs = stack.one_shots()  # the hatchet profile's token job
    for name, state in states.items():
        if name in jobs:
            assert (state["State"], state["ExitCode"]) == ("exited", 0), (name, state)
        else:
            assert state["State"] == "running", (name, state)
            assert state.get("Health") in ("healthy", ""), (name, state)
