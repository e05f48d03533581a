"""compose.yaml up under a real Docker engine, with the live suites run against its ports.

Opt-in (`LGOS_TEST_COMPOSE=1`, set by `just demo/test-compose`): a cold run builds stand-in
images for about 20 minutes. Each run: the hatchet profile (API, worker, Hatchet engine,
LiteLLM), the three live suites against it. `LGOS_COMPOSE_ALL=1` (what `just demo/test-compose
--all` sets) adds both UIs and a second stack in the dbos profile. Images come from
tests/compose/images.py (pulled, or stand-ins built here); the engine from
scripts/setup-docker.sh. Without an engine the tests skip with why. The engine, the images and
the stacks' `compose build` are made in a thread from the end of collection, while the other
tests of the session run (tests/compose/prepare.py); the fixture waits for them.

The stack starts once per profile, with its own deadlines (preparation, builds, then health): a
stack that does not come up fails the first test with `docker compose logs` of the failing
services, and the later ones skip pointing at it (tests/support/started.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import launch_chromium, loopback_context
from tests.support.started import StartFailure, require, start_once

from . import images, prepare
from .prepare import FULL, NOT_OPTED_IN, OPTED_IN, STACK_PROFILES, UIS
from .stack import REPO, Stack, ensure_engine, log, running

# The stack's start has its own deadlines; each test times only its own body.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900, func_only=True)]
# compose.yaml's development defaults: Open WebUI's admin, Chainlit's two logins, the
# stack's PostgreSQL (Chainlit's threads are in its lgos_chainlit database).
OPENWEBUI_ADMIN = ("openwebui@example.com", "openwebui-dev-password")
CHAINLIT_LOGINS = (("demo", "demo"), ("guest", "guest"))
POSTGRES_LOGIN = "lgos:lgos-dev-password"
VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module", params=STACK_PROFILES)
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack | StartFailure]:
    if not OPTED_IN:
        pytest.skip(NOT_OPTED_IN)
    show_progress(request)
    # The engine, the images and their builds, made since the end of collection (prepare.py).
    prepared = prepare.ready()
    if isinstance(prepared, StartFailure):
        yield prepared
        return
    host = prepared.host
    if host is None:
        pytest.skip("no Docker engine answers (scripts/setup-docker.sh says why)")
    os.environ["DOCKER_HOST"] = host  # the docker calls of the tests themselves
    images.docker_host = host
    profile = str(request.param)
    what = f"the compose stack ({profile} profile)"

    def images_for_compose() -> dict[str, str]:
        return images.ensure(full=FULL)  # made by the preparation: its answer

    variables = start_once(f"the images of {what}", images_for_compose)
    if isinstance(variables, StartFailure):
        yield variables
        return
    workdir = tmp_path_factory.mktemp(f"compose-{profile}")
    stack = prepare.stack_of(profile, host, variables, workdir)
    with running_or_failure(stack, what) as started:
        yield started


def show_progress(request: pytest.FixtureRequest) -> None:
    """The engine's start, builds, health and suite counts go to the run's own output (a CI log
    shows them as they happen), not to captured stderr."""
    prepare.show_in_terminal(request.config)


class running_or_failure:  # noqa: N801 - used as a context manager, reads as one
    """`running(stack)`, or the failure to come up as a value (see started.py)."""

    def __init__(self, stack: Stack, what: str) -> None:
        self.context = running(stack)
        self.what = what

    def __enter__(self) -> Stack | StartFailure:
        return start_once(self.what, self.context.__enter__)

    def __exit__(self, *exc: object) -> None:
        self.context.__exit__(None, None, None)


def live_suite(recipe: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`just demo/<recipe> ...` as a developer types it; its summary line is logged."""
    result = subprocess.run(
        ["just", f"demo/{recipe}", *args, "--", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=840,
        env={key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")},
    )
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    log(f"just demo/{recipe}: {summary}")
    return result


@pytest.mark.parametrize(
    ("recipe", "target"),
    [
        ("test-direct", "api"),
        ("test-litellm", "gateway"),
        ("test-background-gateway", "gateway"),
    ],
)
def test_the_live_suites_pass_against_the_compose_ports(
    stack: Stack | StartFailure, recipe: str, target: str
) -> None:
    started = require(stack)
    api, gateway = started.url("LGOS_API_PORT"), started.url("LITELLM_PORT")
    args = ["--base-url", api] if target == "api" else ["--base-url", gateway]
    if recipe == "test-litellm":
        args += ["--api-url", api]
    result = live_suite(recipe, *args)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-3000:]
    assert " passed" in result.stdout


def test_every_started_service_is_healthy_or_done(stack: Stack | StartFailure) -> None:
    """What `docker compose ps` shows a user after `up`: long-running services healthy,
    one-shot jobs (migrate, hatchet-token, openwebui-sync) exited 0."""
    started = require(stack)
    states = started.states()
    assert set(started.services) <= set(states)
    jobs = started.one_shots()
    for name, state in states.items():
        if name in jobs:
            assert (state["State"], state["ExitCode"]) == ("exited", 0), (name, state)
        else:
            assert state["State"] == "running", (name, state)
            assert state.get("Health") in ("healthy", ""), (name, state)


def test_the_collector_receives_the_stacks_traces(stack: Stack | StartFailure) -> None:
    """The otel profile as .env.example describes it: API and worker run under
    opentelemetry-instrument and the collector's debug exporter reports what arrived."""
    started = require(stack)
    if "otel" not in started.profiles:
        pytest.skip("the otel profile runs with `just demo/test-compose --all` (dbos stack)")
    import httpx2

    for _ in range(3):  # requests the API traces (the live suites ran more before this)
        httpx2.get(started.url("LGOS_API_PORT", "/v1/models"), timeout=30).raise_for_status()
    deadline = time.monotonic() + 120  # the batch processor and the exporters' intervals
    while "Traces" not in (collector := started.logs(["otel-collector"])):
        assert time.monotonic() < deadline, collector[-4000:]
        time.sleep(2)
    log("otel-collector: " + next(ln for ln in collector.splitlines() if "Traces" in ln)[-160:])


def test_the_uis_answer_on_the_compose_ports(stack: Stack | StartFailure) -> None:
    started = require(stack)
    if not set(UIS) <= set(started.services):
        pytest.skip("the UIs run with `just demo/test-compose --all` (hatchet stack)")
    import httpx2

    for variable, path in (("CHAINLIT_PORT", "/"), ("OPENWEBUI_PORT", "/health")):
        response = httpx2.get(started.url(variable, path), timeout=30)
        assert response.status_code == 200, (variable, response.text[:500])
    # Open WebUI's own MCP client reaches the graphs through the tool server compose.yaml
    # configures (LGOS's /mcp on the stack's network).
    signin = started.url("OPENWEBUI_PORT", "/api/v1/auths/signin")
    admin = {"email": OPENWEBUI_ADMIN[0], "password": OPENWEBUI_ADMIN[1]}
    token = httpx2.post(signin, json=admin, timeout=30).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    servers = httpx2.get(
        started.url("OPENWEBUI_PORT", "/api/v1/configs/tool_servers"), headers=headers, timeout=30
    ).json()["TOOL_SERVER_CONNECTIONS"]
    connection = next(server for server in servers if server["info"]["id"] == "lgos")
    verify = started.url("OPENWEBUI_PORT", "/api/v1/configs/tool_servers/verify")
    verified = httpx2.post(verify, json=connection, headers=headers, timeout=60)
    assert verified.status_code == 200, verified.text[:500]
    assert "simple-graph" in {spec["name"] for spec in verified.json()["specs"]}


def test_each_ui_answers_and_takes_a_review_in_a_browser(
    stack: Stack | StartFailure, request: pytest.FixtureRequest
) -> None:
    """What a user does first on the compose ports, in Chromium: a simple answer, then a
    review approved, in each UI, through the stack's LiteLLM to its LGOS. (One test for both
    UIs: a parameter of its own would make pytest start the module's stack a second time.)"""
    started = require(stack)
    if not set(UIS) <= set(started.services):
        pytest.skip("the UIs run with `just demo/test-compose --all` (hatchet stack)")
    from playwright.sync_api import expect

    # The stack's containers share two cores: a streamed answer may take a while.
    expect.set_options(timeout=60_000)
    chainlit, openwebui = started.url("CHAINLIT_PORT", "/"), started.url("OPENWEBUI_PORT", "")
    passes: list[tuple[str, Callable[[Any], None]]] = [
        ("chainlit", lambda browser: chainlit_pass(browser, chainlit)),
        ("openwebui", lambda browser: openwebui_pass(browser, openwebui)),
    ]
    in_chromium(started, request, passes, "a simple answer and an approved review")


def in_chromium(
    started: Stack,
    request: pytest.FixtureRequest,
    passes: list[tuple[str, Callable[[Any], None]]],
    done: str,
) -> None:
    """Each UI's pass in one Chromium, logged once it passed; a failing one says what the UI's,
    the gateway's and the API's logs say."""
    # Asked for here, not as an argument: as one, pytest-playwright's session fixture makes
    # pytest order the test after the other modules, and the stack would start again for it.
    browser = launch_chromium(request.getfixturevalue("playwright"))
    try:
        for ui, run in passes:
            try:
                run(browser)
            except AssertionError as error:
                logs = "\n".join(started.logs([name])[-4000:] for name in (ui, "litellm", "api"))
                raise AssertionError(f"{ui}: {error}\n{logs}") from None
            log(f"{ui}: {done} in Chromium on the compose ports")
    finally:
        browser.close()


def chainlit_pass(browser: Any, url: str) -> None:
    from playwright.sync_api import expect

    from tests.support.chainlit_page import Chat

    def signed_in() -> Chat:
        chat = Chat(loopback_context(browser, viewport=VIEWPORT).new_page(), url)
        chat.login()
        return chat

    chat = signed_in()
    chat.pick_model("simple-graph")
    chat.send("Hello from compose")
    expect(chat.page.get_by_text("you said 'Hello from compose'")).to_be_visible()
    chat.page.context.close()
    review = signed_in()  # a new chat: the profile menu starts one
    review.pick_model("interruptible-approval")
    review.send("Compose plan")
    review.answer_review("Approve")
    review.expect_answered("approve")
    expect(review.page.get_by_text("Published 'Compose plan'.")).to_be_visible()


def openwebui_pass(browser: Any, url: str) -> None:
    from playwright.sync_api import expect

    from tests.support import openwebui_page as owui

    page = loopback_context(browser, viewport=VIEWPORT).new_page()
    owui.log_in(page, url, *OPENWEBUI_ADMIN)
    owui.open_chat(page, url, "lgos.simple-graph")
    owui.send(page, "Hello from compose")
    expect(owui.last_answer(page)).to_contain_text("Hello from compose")
    owui.expect_finished(page)
    owui.open_chat(page, url, "lgos.interruptible-approval")
    owui.send(page, "Compose plan")
    card = owui.review_card(page)
    expect(card).to_contain_text("Approve publishing 'Compose plan'?")
    card.get_by_role("button", name=re.compile("^Approve")).click()
    expect(owui.last_answer(page)).to_contain_text("Published 'Compose plan'.")
    owui.expect_finished(page)


def test_two_users_of_each_ui_never_reach_each_others_runs(
    stack: Stack | StartFailure, request: pytest.FixtureRequest
) -> None:
    """The reference stack's chain on the compose ports, as tests/ui/users runs it on local
    processes: two users of each UI in Chromium, neither reaching the other's review, chat or
    background run, in the UI or through the gateway with the other's ids."""
    started = require(stack)
    if not set(UIS) <= set(started.services):
        pytest.skip("the UIs run with `just demo/test-compose --all` (hatchet stack)")
    from playwright.sync_api import expect

    from tests.support import two_users

    expect.set_options(timeout=60_000)
    openwebui = started.url("OPENWEBUI_PORT", "")
    people, tokens = two_users.openwebui_users(openwebui, *OPENWEBUI_ADMIN)
    chainlit = tuple(
        two_users.Person(login, password, "x-litellm-end-user-id", f"chainlit:{login}")
        for login, password in CHAINLIT_LOGINS
    )

    def waiting_reviews() -> str:
        path = "/app/backend/data/lgos_pending_reviews.json"
        shown = started.run("exec", "-T", "openwebui", "cat", path, timeout=60)
        return shown.stdout if shown.returncode == 0 else ""

    users = two_users.UserStack(
        gateway_url=started.url("LITELLM_PORT"),
        chainlit_url=started.url("CHAINLIT_PORT", ""),
        chainlit_database=f"postgresql://{POSTGRES_LOGIN}@127.0.0.1:"
        f"{started.ports['POSTGRES_PORT']}/lgos_chainlit",
        openwebui_url=openwebui,
        chainlit_users=(chainlit[0], chainlit[1]),
        openwebui_users=people,
        openwebui_tokens=tokens,
        read_waiting_reviews=waiting_reviews,
    )
    passes: list[tuple[str, Callable[[Any], None]]] = [
        ("chainlit", lambda browser: two_users.chainlit_users_stay_apart(users, browser)),
        ("openwebui", lambda browser: two_users.openwebui_users_stay_apart(users, browser)),
    ]
    in_chromium(started, request, passes, "two users kept apart")


def test_the_stand_ins_are_the_versions_compose_names() -> None:
    """A stand-in's tag is the upstream tag, and what it installs is that release."""
    config = (REPO / "compose.yaml").read_text()
    for image in images.IMAGES:
        assert f"${{{image.variable}:-{image.upstream}}}" in config, image.variable
    by_recipe = {image.recipe: image for image in images.IMAGES}
    litellm = (REPO / "demo/litellm/requirements.txt").read_text()
    assert f"litellm=={by_recipe['litellm'].tag.removeprefix('v')}\n" in litellm
    openwebui = (REPO / "demo/openwebui/requirements.txt").read_text()
    assert (
        f"open-webui=={by_recipe['openwebui'].tag.removeprefix('v').split('-')[0]}\n" in openwebui
    )
    hatchet = by_recipe["hatchet-lite"]
    assert images.HATCHET_BIN.parent.name == hatchet.tag
    setup = (REPO / "scripts/setup-hatchet.sh").read_text()
    assert f'HATCHET_VERSION="${{HATCHET_VERSION:-{hatchet.tag}}}"' in setup
    # The collector's Go module builds that release's components and reports that version.
    otel = by_recipe["otel-collector"]
    module = (images.STANDINS / "otel-collector" / "go.mod").read_text()
    assert f"go.opentelemetry.io/collector/otelcol v{otel.tag}\n" in module
    assert f"attributesprocessor v{otel.tag}\n" in module
    main = (images.STANDINS / "otel-collector" / "main.go").read_text()
    assert f'const version = "{otel.tag}"' in main
    # Debian bookworm's Python is 3.11, the minor version of the python image.
    assert by_recipe["python"].tag.startswith("3.11-")
    assert images.SUITE in by_recipe["python"].tag


def test_a_classic_builder_build_of_the_api_image_holds_no_local_files(tmp_path: Path) -> None:
    """The api image's context is the repo root; with the classic builder only a root
    .dockerignore applies. A checkout with a venv, an env file and the UIs' environments must
    give an image with none of them."""
    if not OPTED_IN:
        pytest.skip(NOT_OPTED_IN)
    host = ensure_engine()
    if host is None:
        pytest.skip("no Docker engine answers (scripts/setup-docker.sh says why)")
    env = {**os.environ, "DOCKER_HOST": host, "DOCKER_BUILDKIT": "0"}
    os.environ["DOCKER_HOST"] = host
    python = images.ensure_python()
    # A copy of the tracked files, plus what a developer's checkout has beside them.
    checkout = tmp_path / "checkout"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        source, target = REPO / name.decode(), checkout / name.decode()
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    for canary in (".env", ".venv/bin/python", "demo/chainlit/.venv/x", "demo/chainlit/.env",
                   "demo/openwebui/.data/webui.db", "demo/.run/api.pid"):  # fmt: skip
        (checkout / canary).parent.mkdir(parents=True, exist_ok=True)
        (checkout / canary).write_text("local only\n")
    tag = f"lgos-test-api:{os.getpid()}"
    built = subprocess.run(
        [
            "docker",
            "build",
            "--network",
            "host",
            "-q",
            "-t",
            tag,
            "--build-arg",
            f"PYTHON_IMAGE={python}",
            "-f",
            "demo/docker/api.Dockerfile",
            ".",
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    try:
        listed = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--entrypoint",
                "find",
                tag,
                "/app",
                "-not",
                "-path",
                "*/__pycache__*",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], env=env, capture_output=True)
    assert listed.returncode == 0, listed.stderr
    files = {line.removeprefix("/app/") for line in listed.stdout.splitlines()}
    assert "lgos/__init__.py" in files
    assert "demo/registry.py" in files
    leaked = [
        path
        for path in files
        if any(
            part in (".venv", ".env", ".data", ".run", "tests", "docs") for part in path.split("/")
        )
        or path.split("/")[:2] in (["demo", "chainlit"], ["demo", "openwebui"], ["demo", "litellm"])
    ]
    assert not leaked, sorted(leaked)[:20]
