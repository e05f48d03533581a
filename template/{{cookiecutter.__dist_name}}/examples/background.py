"""Run the `chat` graph in the background, then poll until it has finished.

Usage: uv run python examples/background.py "Summarise the week"

The Response id is all a client needs to come back later, from any process.
"""

from __future__ import annotations

import argparse
import time

from _client import client

POLL_SECONDS = 0.5
TIMEOUT_SECONDS = 300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    args = parser.parse_args()
    openai = client()

    response = openai.responses.create(model="chat", input=args.question, background=True)
    print(f"{response.id}: {response.status}")
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while response.status in ("queued", "in_progress"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{response.id} is still {response.status}; poll it again later")
        time.sleep(POLL_SECONDS)
        response = openai.responses.retrieve(response.id)
    print(f"{response.id}: {response.status}")
    print(response.output_text)


if __name__ == "__main__":
    main()
