"""Children of a benchmark: a free port for one, and stopping one the way a supervisor would."""

from __future__ import annotations

import signal
import socket
import subprocess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `grace` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
