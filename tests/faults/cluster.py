"""A PostgreSQL cluster of the tests' own, on its own port, that they may restart at will.

The shared server on 5432 serves other work; a fault test never touches it. The cluster lives
in a temporary directory and runs as the `postgres` OS user (PostgreSQL refuses to run as
root), with the binaries Debian installs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.servers import free_port

BIN = Path(os.environ.get("LGOS_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
START_SECONDS = 120


class Cluster:
    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.log = directory / "postgres.log"
        self.port = port

    @property
    def uri(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(BIN / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=START_SECONDS, check=False
        )
        if result.returncode != 0:
            tail = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise AssertionError(f"{args[0]} failed: {result.stderr}\n{tail}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c max_connections=200 -c fsync=off -c synchronous_commit=off"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            str(START_SECONDS),
            "start",
        )

    def restart(self) -> None:
        """Stop (every session is cut, as in a real restart), then start again."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self.start()

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server. `immediate` may lose the last commits (the cluster runs with
        `synchronous_commit=off`); `fast` keeps them, and still cuts every session."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")


def available() -> str | None:
    """Why a private cluster cannot run here, or None."""
    if not (BIN / "initdb").exists():
        return f"PostgreSQL binaries not found in {BIN}"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser"
    return None


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    directory = Path(tempfile.mkdtemp(prefix="lgos-faults-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    cluster = Cluster(directory, free_port())
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(AssertionError):  # already stopped
            cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
