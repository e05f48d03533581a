"""How the durable suite times things: polling intervals, creates in flight, medians in ms."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

POLL_SECONDS = 0.01
# Gentle polling in bursts: hundreds of clients polling every 10 ms would measure the API.
BURST_POLL_SECONDS = 0.25
IN_FLIGHT = 16  # creates (or triggers) in flight during a burst


def median_ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


async def burst_rate(burst: int, one: Callable[[int], Awaitable[None]]) -> float:
    """Runs per second of `burst` runs started together."""
    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(burst)))
    return burst / (time.perf_counter() - started)
