"""Ask the `chat` graph one question, as a whole answer or streamed.

Usage: uv run python examples/responses.py [--stream] [--tone formal] "What can you do?"
"""

from __future__ import annotations

import argparse
import json

from _client import client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--stream", action="store_true", help="print the answer as it streams")
    parser.add_argument("--tone", choices=["friendly", "formal"], default="friendly")
    args = parser.parse_args()
    # Client settings travel as a JSON string in metadata, on every request.
    metadata = {"lgos_settings": json.dumps({"tone": args.tone})}
    openai = client()
    if not args.stream:
        response = openai.responses.create(model="chat", input=args.question, metadata=metadata)
        print(response.output_text)
        return
    with openai.responses.stream(model="chat", input=args.question, metadata=metadata) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                print(event.delta, end="", flush=True)
    print()


if __name__ == "__main__":
    main()
