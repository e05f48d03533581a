"""Start the `approval` graph, show its question, send the answer back.

Usage: uv run python examples/approval.py [--answer approve] "restart the billing job"
(without --answer, it asks you)
"""

from __future__ import annotations

import argparse
import json

from _client import client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action")
    parser.add_argument("--answer", help="answer without asking (approve, reject, or a comment)")
    args = parser.parse_args()
    openai = client()

    paused = openai.responses.create(model="approval", input=args.action)
    # A pause completes the Response with one `lgos_interrupt` function call per question.
    calls = [
        item
        for item in paused.output
        if item.type == "function_call" and item.name == "lgos_interrupt"
    ]
    outputs = []
    for call in calls:
        question = json.loads(call.arguments)
        print(f"{question['question']} {question['choices']}")
        answer = args.answer or input("> ")
        outputs.append({"type": "function_call_output", "call_id": call.call_id, "output": answer})

    # The answer is a new request that names the paused Response.
    done = openai.responses.create(model="approval", previous_response_id=paused.id, input=outputs)
    print(done.output_text)


if __name__ == "__main__":
    main()
