"""The reference stack as `just demo/up` wires it, with two users in each UI: `lgos serve`
taking only the gateway's key (and the user the gateway names beside it), the LiteLLM proxy
from demo/litellm with its hooks, Chainlit with two logins, and Open WebUI with real logins
(an admin for the set-up, and two plain users). Every piece is a real process on a free
loopback port, started by its own launcher (run.sh); the browser is Debian's Chromium.

A module of its own (not conftest.py), so the tests import it by a name no other test folder
uses.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from tests.support.postgres import ADMIN_URI, create_database, drop_database
from tests.support.processes import LGOS, REPO, Process, answering, clean_environment, free_port
from tests.support.stack_auth import API_AUTH, GATEWAY_LGOS_KEY, LITELLM_DEV_KEY
from tests.support.two_users import Person, UserStack, openwebui_users

START_DEADLINE = 300.0  # seconds, per piece: LiteLLM and Open WebUI import for minutes when busy
ADMIN = ("openwebui@example.com", "openwebui-dev-password")


def run_step(command: list[str], timeout: float) -> None:
    """One set-up command with its own deadline; its output is the failure's message."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )


class UserStackProcesses:
    """Starts the pieces in order, each once ready; `stop()` stops what started."""

    def __init__(self, workdir: Path) -> None:
        self.logs = workdir
        self.processes: list[Process] = []
        # Chainlit's own database (asyncpg takes a URL, not a key=value string).
        self.database, _ = create_database("lgos_users_chainlit")
        self.chainlit_database = f"{ADMIN_URI.rsplit('/', 1)[0]}/{self.database}"

    def launch(self, name: str, command: list[str], env: dict[str, str], ready: str) -> None:
        log = self.logs / f"{name}.log"
        self.processes.append(answering(command, env, log, ready, START_DEADLINE))

    def start(self) -> UserStack:
        api_port, gateway_port = free_port(), free_port()
        chainlit_port, openwebui_port = free_port(), free_port()
        api = f"http://127.0.0.1:{api_port}/v1"
        gateway = f"http://127.0.0.1:{gateway_port}/v1"
        serve = [LGOS, "serve", "demo.registry:create_registry", "--host", "127.0.0.1"]
        lgos_env = clean_environment(LGOS_BACKGROUND="memory", **API_AUTH)
        self.launch("api", [*serve, "--port", str(api_port)], lgos_env, f"{api}/models")
        run_step(["bash", "demo/litellm/setup.sh"], timeout=1800)
        litellm_env = {
            **os.environ,
            "LGOS_API_BASE_URL": api,
            "LGOS_API_KEY": GATEWAY_LGOS_KEY,
            "LITELLM_PORT": str(gateway_port),
            "LITELLM_MASTER_KEY": LITELLM_DEV_KEY,
        }
        ready = f"http://127.0.0.1:{gateway_port}/health/readiness"
        self.launch("litellm", ["bash", "demo/litellm/run.sh"], litellm_env, ready)
        alice, bob = (f"{name}-{secrets.token_hex(4)}" for name in ("alice", "bob"))
        chainlit = f"http://127.0.0.1:{chainlit_port}"
        chainlit_env = {
            **os.environ,
            "PORT": str(chainlit_port),
            "LGOS_BASE_URL": gateway,
            "LGOS_API_KEY": LITELLM_DEV_KEY,
            "DATABASE_URL": self.chainlit_database,
            "CHAINLIT_AUTH_SECRET": secrets.token_urlsafe(48),
            "LGOS_CHAINLIT_USERS": f"alice:{alice},bob:{bob}",
        }
        self.launch("chainlit", ["bash", "demo/chainlit/run.sh"], chainlit_env, f"{chainlit}/login")
        openwebui = f"http://127.0.0.1:{openwebui_port}"
        data = self.logs / "openwebui-data"
        openwebui_env = {
            **os.environ,
            "OPENWEBUI_DATA_DIR": str(data),
            "OPENWEBUI_PORT": str(openwebui_port),
            "LGOS_BASE_URL": gateway,
            "LGOS_API_KEY": LITELLM_DEV_KEY,
            "WEBUI_AUTH": "true",
            "WEBUI_ADMIN_EMAIL": ADMIN[0],
            "WEBUI_ADMIN_PASSWORD": ADMIN[1],
            "WEBUI_ADMIN_NAME": "Admin",
        }
        self.launch(
            "openwebui", ["bash", "demo/openwebui/run.sh"], openwebui_env, f"{openwebui}/health"
        )
        sync = [sys.executable, "demo/openwebui/sync.py", "--url", openwebui, "--lgos-url", gateway]
        sync += ["--lgos-key", LITELLM_DEV_KEY, "--email", ADMIN[0], "--password", ADMIN[1]]
        run_step([*sync, "--poll-interval", "0.25"], timeout=300)
        people, tokens = openwebui_users(openwebui, *ADMIN)
        waiting = data / "lgos_pending_reviews.json"
        return UserStack(
            gateway_url=gateway,
            chainlit_url=chainlit,
            chainlit_database=self.chainlit_database,
            openwebui_url=openwebui,
            chainlit_users=(
                Person("alice", alice, "x-litellm-end-user-id", "chainlit:alice"),
                Person("bob", bob, "x-litellm-end-user-id", "chainlit:bob"),
            ),
            openwebui_users=people,
            openwebui_tokens=tokens,
            read_waiting_reviews=lambda: waiting.read_text() if waiting.exists() else "",
        )

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop(grace=20)
        drop_database(self.database)
