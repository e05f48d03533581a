"""A worker process in miniature, for `test_job.py`: reads one stored job (JSON) on stdin, runs
it as every engine's task does (`JobExecutor`, durable, with an event log), and prints the
Response, the events it logged and which request decoders this process ever imported.

Run as `python -m tests.background.job_worker ENGINE_RUN_ID`.
"""

from __future__ import annotations

import asyncio
import json
import sys

from langgraph.checkpoint.memory import InMemorySaver

from demo.graphs.review import DelaySettings, background_mock_graph
from lgos.background.executor import DurableRuns, JobExecutor
from lgos.core.background import BackgroundJob
from lgos.core.coordinator import InMemoryRunCoordinator
from lgos.core.event_log import InMemoryResponseEventLog
from lgos.core.registry import GraphConfig, GraphFeature, GraphRegistry

DECODERS = ("lgos.wire.decoding", "lgos.wire.responses_decoder", "lgos.wire.chat_decoder")


def registry() -> GraphRegistry:
    """`background-mock` alone (test_hatchet.py runs its Hatchet task body on it too)."""
    return GraphRegistry(
        graphs={
            "background-mock": GraphConfig(
                graph=background_mock_graph(),
                description="Writes a report.",
                features=frozenset({GraphFeature.BACKGROUND}),
                client_settings=DelaySettings,
            )
        }
    )


async def main(engine_run_id: str) -> None:
    # Read as an engine reads its stored input: JSON, validated into the job.
    job = BackgroundJob.model_validate_json(sys.stdin.read())
    events = InMemoryResponseEventLog()
    executor = JobExecutor(
        registry=registry(),
        durable=DurableRuns(InMemorySaver(), InMemoryRunCoordinator()),
        events=events,
    )
    response = await executor(job, engine_run_id)
    report = {
        "response": response,
        "events": await events.read(engine_run_id),
        "decoders": sorted(name for name in DECODERS if name in sys.modules),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
