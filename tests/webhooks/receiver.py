"""A webhook receiver for the tests, run as its own process: `python -m tests.webhooks.receiver
PORT`. It answers every POST 200 and prints one JSON line per request it got (its headers and
its body, as received), which the test reads and verifies with the official SDK."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Requests are handled on threads: one line at a time, so two records never interleave.
_PRINTING = threading.Lock()


def _record(record: dict[str, object]) -> None:
    with _PRINTING:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode()
        headers = {key.lower(): value for key, value in self.headers.items()}
        _record({"message": "received", "headers": headers, "body": body})
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: stdout carries only the records the test parses."""


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _Handler)
    _record({"message": "listening"})
    server.serve_forever()


if __name__ == "__main__":
    main()
