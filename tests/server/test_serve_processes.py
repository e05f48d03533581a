"""`lgos serve` as an operator runs it: real processes on loopback ports.

Each process runs from `tests/server/`, so `sample_app` is imported from the working directory.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from openai import NotFoundError, OpenAI

from tests.server.sample_app import SAMPLE_DIR, SAMPLE_REGISTRY
from tests.server.sample_app.registry import ANSWER
from tests.support import processes
from tests.support.processes import (
    LGOS,
    START_TIMEOUT,
    Process,
    clean_environment,
    free_port,
)

pytestmark = [pytest.mark.processes, pytest.mark.slow, pytest.mark.timeout(600)]

# A prompt the logs must never contain.
PROMPT = "my card number is 4111-1111-1111-1111"


def serving(args: list[str], env: dict[str, str]) -> Any:
    return processes.serving(args, env, cwd=SAMPLE_DIR)


def run_to_exit(args: list[str], env: dict[str, str]) -> Process:
    return processes.run_to_exit(args, env, cwd=SAMPLE_DIR)


def openai_client(server: Process, prefix: str = "/v1") -> OpenAI:
    return OpenAI(
        base_url=server.base_url + prefix,
        api_key="unused",
        _strict_response_validation=True,
        max_retries=0,
    )


def ask(server: Process, request_id: str, prefix: str = "/v1") -> None:
    completion = openai_client(server, prefix).chat.completions.create(
        model="sample",
        messages=[{"role": "user", "content": PROMPT}],
        extra_headers={"X-Request-ID": request_id},
    )
    assert completion.choices[0].message.content == ANSWER


def node_record(server: Process, request_id: str) -> dict[str, Any]:
    [record] = server.wait_for_record(
        lambda r: r.get("logger") == "sample_app.graph" and r.get("request_id") == request_id
    )
    return record


def test_help_lists_uvicorn_options() -> None:
    result = subprocess.run(
        [LGOS, "serve", "--help"], capture_output=True, text=True, check=True, timeout=60
    )
    for flag in (
        "--port",
        "--host",
        "--reload",
        "--workers",
        "--env-file",
        "--log-config",
        "--access-log",
        "--forwarded-allow-ips",
        "--root-path",
        "--timeout-keep-alive",
    ):
        assert flag in result.stdout, flag


def test_registry_argument_json_logs_carry_request_fields_from_graph_nodes() -> None:
    with serving([SAMPLE_REGISTRY, "--port", "0"], clean_environment()) as server:
        ask(server, "req-chat-1")
        record = node_record(server, "req-chat-1")
        assert record["model"] == "sample"
        assert record["stream"] is False
        assert record["node"] == "answer"
        assert record["level"] == "info"

        # A streamed Responses request: the node's record also names the response and run.
        with openai_client(server).responses.stream(
            model="sample", input=PROMPT, extra_headers={"X-Request-ID": "req-resp-2"}
        ) as stream:
            final = stream.get_final_response()
        assert final.output_text == ANSWER
        record = node_record(server, "req-resp-2")
        assert record["stream"] is True
        assert record["response_id"] == final.id
        records = server.records()  # every stdout line is a JSON object

    loggers = {record["logger"] for record in records}
    assert "uvicorn.error" in loggers  # Uvicorn's records go through the same handler
    assert "uvicorn.access" not in loggers  # no access log by default
    assert "noisy_dependency" not in loggers  # other libraries: WARNING and above only
    assert not [line for line in server.stdout if PROMPT in line]


def test_registry_from_environment_with_access_log() -> None:
    env = clean_environment(LGOS_REGISTRY=SAMPLE_REGISTRY)
    with serving(["--port", "0", "--access-log"], env) as server:
        ask(server, "req-env-1")
        [access] = server.wait_for_record(lambda r: r.get("logger") == "uvicorn.access")
    assert "POST /v1/chat/completions" in access["message"]
    # The access record carries the same request fields as the request's own record.
    assert access["request_id"] == "req-env-1"
    assert access["model"] == "sample"
    assert access["stream"] is False


def test_log_level_applies_to_lgos_and_the_registry_package() -> None:
    # Uvicorn's --log-level alone would leave LGOS's loggers and the registry's at INFO: a
    # record per request from a server asked for warnings only.
    # No "Uvicorn running on" line (an INFO record) to wait for: the port is chosen here.
    port = free_port()
    args = [SAMPLE_REGISTRY, "--port", str(port), "--log-level", "warning"]
    server = processes.lgos("serve", *args, env=clean_environment(), cwd=SAMPLE_DIR)
    try:
        server.base_url = f"http://127.0.0.1:{port}"
        server.wait_http(server.base_url + "/v1/health")
        ask(server, "req-quiet-1")
    finally:
        server.stop()
    records = server.records()  # the process has exited: everything it wrote
    assert [r for r in records if r["message"] == "server.persistence.in_memory"]  # a warning
    assert [r for r in records if r["level"] not in ("warning", "error", "critical")] == []


def request_records(server: Process, request_id: str) -> list[dict[str, Any]]:
    server.wait_for_record(
        lambda r: r.get("message") == "http.request" and r.get("request_id") == request_id
    )
    return [
        record
        for record in server.records()
        if record.get("message") == "http.request" and record.get("request_id") == request_id
    ]


def test_one_record_per_request_by_default() -> None:
    with serving([SAMPLE_REGISTRY, "--port", "0"], clean_environment()) as server:
        ask(server, "req-ok-1")
        client = openai_client(server)
        with pytest.raises(NotFoundError):
            client.responses.create(
                model="no-such-model", input=PROMPT, extra_headers={"X-Request-ID": "req-404-1"}
            )
        with client.responses.stream(
            model="sample", input=PROMPT, extra_headers={"X-Request-ID": "req-stream-1"}
        ) as stream:
            final = stream.get_final_response()
        [ok] = request_records(server, "req-ok-1")
        [missing] = request_records(server, "req-404-1")
        [streamed] = request_records(server, "req-stream-1")
        lines = list(server.stdout)

    assert ok["logger"] == "lgos.http.request"
    assert ok["level"] == "info"
    assert ok["http.request.method"] == "POST"
    assert ok["http.route"] == "/v1/chat/completions"
    assert ok["http.response.status_code"] == 200
    assert ok["model"] == "sample"
    assert ok["stream"] is False
    assert ok["duration_ms"] >= 0

    assert missing["level"] == "info"
    assert missing["http.route"] == "/v1/responses"
    assert missing["http.response.status_code"] == 404
    assert missing["model"] == "no-such-model"

    # A stream's record is written when the stream ends, with the response it produced.
    assert streamed["http.response.status_code"] == 200
    assert streamed["response_id"] == final.id
    assert streamed["stream"] is True
    assert streamed["background"] is False
    assert not [line for line in lines if PROMPT in line or ANSWER in line]  # no prompt or output


def test_env_file_loads_lgos_settings(tmp_path: Path) -> None:
    env_file = tmp_path / "server.env"
    env_file.write_text(
        "LGOS_OPENAI_API_PREFIX=/api\nLGOS_CORS_ORIGINS='[\"https://app.example.com\"]'\n"
    )
    args = [SAMPLE_REGISTRY, "--port", "0", "--env-file", str(env_file)]
    with serving(args, clean_environment()) as server:
        ask(server, "req-file-1", prefix="/api")
        preflight = httpx2.options(
            server.base_url + "/api/chat/completions",
            headers={
                "Origin": "https://app.example.com",
                "Access-Control-Request-Method": "POST",
            },
        )
        unknown = httpx2.get(server.base_url + "/v1/models")
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example.com"
    assert unknown.status_code == 404


def test_uvicorn_variables_configure_the_server(tmp_path: Path) -> None:
    port = free_port()
    # A log configuration of the user's own replaces the structured logs.
    log_config = tmp_path / "logging.json"
    log_config.write_text(
        json.dumps(
            {
                "version": 1,
                "disable_existing_loggers": False,
                "formatters": {"plain": {"format": "PLAIN %(levelname)s %(name)s %(message)s"}},
                "handlers": {
                    "out": {
                        "class": "logging.StreamHandler",
                        "stream": "ext://sys.stdout",
                        "formatter": "plain",
                    }
                },
                "root": {"level": "INFO", "handlers": ["out"]},
            }
        )
    )
    env = clean_environment(
        UVICORN_PORT=str(port),
        UVICORN_LOG_CONFIG=str(log_config),
        FORWARDED_ALLOW_IPS="127.0.0.1",
    )
    with serving([SAMPLE_REGISTRY], env) as server:
        assert server.base_url == f"http://127.0.0.1:{port}"
        ask(server, "req-port-1")
        server.wait_for(
            lambda: any(line.startswith("PLAIN INFO sample_app.graph") for line in server.stdout),
            30,
            "the node's record in the user's format",
        )
    assert all(line.startswith("PLAIN ") for line in server.stdout)


@pytest.mark.parametrize(
    ("args", "json_lines"), [([], False), (["--no-use-colors"], True)], ids=["tty", "json"]
)
def test_terminal_output(args: list[str], json_lines: bool) -> None:
    """On a terminal the records are readable lines; --no-use-colors keeps JSON there."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [LGOS, "serve", SAMPLE_REGISTRY, "--port", "0", *args],
        cwd=SAMPLE_DIR,
        env=clean_environment(),
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while b"Uvicorn running on" not in output:
            assert time.monotonic() < deadline, output.decode(errors="replace")
            ready, _, _ = select.select([controller], [], [], 1.0)
            if ready:
                try:
                    output += os.read(controller, 65536)
                except OSError:  # the process closed the terminal
                    break
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()
        os.close(controller)
    [line] = [line for line in output.decode().splitlines() if "Uvicorn running on" in line]
    if json_lines:
        assert json.loads(line)["logger"] == "uvicorn.error"
    else:
        assert not line.startswith("{")
        assert " INFO    uvicorn.error: Uvicorn running on http://127.0.0.1:" in line


def startup_complete(record: dict[str, Any]) -> bool:
    return bool(record["message"] == "Application startup complete.")


def test_reload_serves_the_edited_registry(tmp_path: Path) -> None:
    """--reload restarts the server when a source file changes, and serves the new code."""
    shutil.copytree(SAMPLE_DIR / "sample_app", tmp_path / "sample_app")
    args = [SAMPLE_REGISTRY, "--port", "0", "--reload"]
    with processes.serving(args, clean_environment(), cwd=tmp_path) as server:
        server.wait_for_record(startup_complete)
        ask(server, "req-reload-1")
        node_record(server, "req-reload-1")

        registry = tmp_path / "sample_app" / "registry.py"
        edited = "Hello from the edited sample app."
        registry.write_text(registry.read_text().replace(ANSWER, edited))
        server.wait_for_record(startup_complete, count=2)
        completion = openai_client(server).chat.completions.create(
            model="sample", messages=[{"role": "user", "content": "hello"}]
        )
        assert completion.choices[0].message.content == edited


@pytest.mark.postgres
def test_two_workers_share_postgresql(postgres_uri: str) -> None:
    env = clean_environment(LGOS_POSTGRES_URI=postgres_uri, LGOS_BACKGROUND="none")
    with serving([SAMPLE_REGISTRY, "--port", "0", "--workers", "2"], env) as server:
        started = server.wait_for_record(
            lambda r: r["message"] == "Application startup complete.", count=2, timeout=120
        )
        assert len(started) == 2
        for number in range(4):
            ask(server, f"req-workers-{number}")
        processes = server.wait_for_record(
            lambda r: r["message"].startswith("Started server process"), count=2
        )
    assert len({record["message"] for record in processes}) == 2  # two distinct pids


@pytest.mark.parametrize(
    ("variables", "args", "expected"),
    [
        ({"LGOS_POSTGRES_POOL_SIZE": "0"}, [], "LGOS_POSTGRES_POOL_SIZE=0"),
        ({"LGOS_CORS_ORIGINS": "https://app.example.com"}, [], "LGOS_CORS_ORIGINS"),
        ({"LGOS_BACKGROUND": "sometimes"}, [], "LGOS_BACKGROUND=sometimes"),
        ({}, ["--workers", "2"], "LGOS_BACKGROUND=memory"),
        ({"WEB_CONCURRENCY": "3"}, [], "LGOS_BACKGROUND=memory"),
        ({"LGOS_REGISTRY": "sample_app.missing:create_registry"}, [], "sample_app.missing"),
    ],
)
def test_invalid_settings_stop_start_up_with_one_line(
    variables: dict[str, str], args: list[str], expected: str
) -> None:
    env = clean_environment(**{"LGOS_REGISTRY": SAMPLE_REGISTRY, **variables})
    server = run_to_exit(["--port", "0", *args], env)
    assert server.process.returncode == 2
    assert len(server.stderr) == 1, server.output()
    assert server.stderr[0].startswith("Error: ")
    assert expected in server.stderr[0]
    assert not server.stdout
