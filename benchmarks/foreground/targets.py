"""The servers under test: each one Uvicorn process with one worker and the same settings."""

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.common import processes
from benchmarks.common.machine import REPO

REFERENCE_VERSION = "0.31.0"
REFERENCE_ENV = Path("benchmarks") / ".venv-reference"

# Identical for every target. Uvicorn's plain defaults (asyncio loop, h11), which is what both
# products install; a long keep-alive so idle connections survive the other targets' batches.
UVICORN_FLAGS = (
    "--host",
    "127.0.0.1",
    "--workers",
    "1",
    "--loop",
    "asyncio",
    "--http",
    "h11",
    "--timeout-keep-alive",
    "600",
    "--no-access-log",
    "--log-level",
    "warning",
)


def cores() -> tuple[int | None, int | None]:
    """The server's core and the client's core, or None when the machine has only one."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None, None
    return allowed[0], allowed[1]


def ensure_reference_env() -> Path:
    """Install the reference product in its own environment, once; return its `lgos` script."""
    script = REPO / REFERENCE_ENV / "bin" / "lgos"
    if script.exists():
        return script
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    env_dir = str(REFERENCE_ENV)
    subprocess.run(["uv", "venv", "--quiet", "--python", python, env_dir], cwd=REPO, check=True)
    package = f"langgraph-openai-serve[server]=={REFERENCE_VERSION}"
    subprocess.run(
        ["uv", "pip", "install", "--quiet", "--python", env_dir, package], cwd=REPO, check=True
    )
    return script


def reference_versions() -> str:
    """Versions of the key packages inside the reference environment."""
    python = REPO / REFERENCE_ENV / "bin" / "python"
    names = ["langgraph-openai-serve", "langgraph", "langchain-core", "fastapi", "uvicorn"]
    code = (
        "import importlib.metadata as m, sys; "
        "print(', '.join(f'{n} {m.version(n)}' for n in sys.argv[1:]))"
    )
    result = subprocess.run(
        [str(python), "-c", code, *names], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def lgos_available() -> bool:
    try:
        import lgos.cli  # noqa: F401
    except ImportError:
        return False
    return True


def commands(names: list[str]) -> dict[str, list[str]]:
    """The command line of each named target; installs the reference's environment if needed."""
    argvs = {
        "bare": lambda: [sys.executable, "-m", "uvicorn", "benchmarks.foreground.bare:app"],
        "lgos": lambda: [
            sys.executable,
            "-c",
            "import sys; from lgos.cli import main; sys.argv[0] = 'lgos'; sys.exit(main())",
            "serve",
            "benchmarks.foreground.graphs:create_registry",
        ],
        # The same server with `store` off by default: what keeping every Response costs.
        "lgos-nostore": lambda: [
            sys.executable,
            "-c",
            "import sys; from lgos.cli import main; sys.argv[0] = 'lgos'; sys.exit(main())",
            "serve",
            "benchmarks.foreground.graphs:create_registry",
        ],
        "reference": lambda: [
            str(ensure_reference_env()),
            "serve",
            "benchmarks.foreground.graphs:create_reference_registry",
        ],
    }
    return {name: argvs[name]() for name in names}


# Environment of each target beyond the benchmark's own.
ENVIRONMENTS = {"lgos-nostore": {"LGOS_STORE_RESPONSES": "false"}}


def _process_cpu_clock(pid: int) -> int:
    """Linux's CPU-time clock of another process (`clock_getcpuclockid(3)` builds this id):
    CPUCLOCK_SCHED (2) of the whole thread group of `pid`."""
    return (~pid << 3) | 2


@dataclass
class Target:
    """One running server process."""

    name: str
    argv: list[str]
    core: int | None
    port: int = field(default_factory=processes.free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log_dir: Path) -> None:
        core = self.core
        self.log = log_dir / f"{self.name}.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [*self.argv, *UVICORN_FLAGS, "--port", str(self.port)],
                cwd=REPO,
                env={**os.environ, **self.env} if self.env else None,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if core is not None else None,
            )
        self.info = psutil.Process(self.process.pid)

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not listen within {timeout} s; see {self.log}")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (all its threads, ended ones
        included), in nanoseconds from the kernel's scheduler: `/proc`'s user and system times
        (psutil) count in 10 ms ticks, a step of about 2 % of a short batch."""
        assert self.process is not None
        return time.clock_gettime_ns(_process_cpu_clock(self.process.pid)) / 1e9

    def rss_mib(self) -> float:
        return self.info.memory_info().rss / 2**20

    def stop(self) -> None:
        if self.process is not None:
            processes.stop(self.process, grace=15)
