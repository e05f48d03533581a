"""The in-memory store keeps a bounded number of records: a long trial does not grow forever."""

from __future__ import annotations

import pytest

from lgos.stored import InMemoryResponseStore, StoredResponse

pytestmark = pytest.mark.anyio


async def test_the_oldest_responses_go_first_past_the_bound() -> None:
    store = InMemoryResponseStore(max_records=3)
    for number in range(5):
        await store.put_response(StoredResponse(id=f"resp_{number}", owner_scope="s", model="m"))
    kept = [await store.get_response(f"resp_{number}", "s") for number in range(5)]
    assert [record is not None for record in kept] == [False, False, True, True, True]
