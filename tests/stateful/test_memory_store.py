"""The in-memory store keeps a bounded number of records: a long trial does not grow forever."""

from __future__ import annotations

import pytest

from lgos.core.stored import StoredResponse
from lgos.core.stored_memory import InMemoryResponseStore

pytestmark = pytest.mark.anyio


async def test_the_oldest_responses_go_first_past_the_bound() -> None:
    store = InMemoryResponseStore(max_records=3)
    for number in range(5):
        await store.put_response(StoredResponse(id=f"resp_{number}", owner_scope="s", model="m"))
    kept = [await store.get_response(f"resp_{number}", "s") for number in range(5)]
    assert [record is not None for record in kept] == [False, False, True, True, True]


async def test_an_evicted_response_takes_its_events_along() -> None:
    # A foreground stream logs under its id, a background run under its run key.
    store = InMemoryResponseStore(max_records=1)
    event = {"type": "response.created", "sequence_number": 0}
    for response_id, events_key in (("resp_stream", "resp_stream"), ("resp_bg", "run_bg")):
        await store.put_response_and_log(
            StoredResponse(id=response_id, owner_scope="s", model="m", events_key=events_key),
            events_key,
            [event],
        )
    await store.put_response(StoredResponse(id="resp_plain", owner_scope="s", model="m"))
    assert await store.events.read("resp_stream") == []
    assert await store.events.read("run_bg") == []


async def test_a_response_reads_back_as_stored_and_as_a_copy() -> None:
    store = InMemoryResponseStore()
    response = {
        "id": "resp_1",
        "output": [{"type": "message", "content": [{"text": "héllo", "annotations": []}]}],
        "usage": {"input_tokens": 2**70},  # past 64 bits: kept exactly all the same
        "temperature": 0.1,
        "error": None,
    }
    items = [{"type": "message", "id": "msg_1", "role": "user", "content": "hi"}]
    stored = StoredResponse(
        id="resp_1",
        owner_scope="s",
        model="m",
        created_at=7,
        input_items=items,
        response=response,
        events_key="run1",
        checkpoint_id="",
    )
    await store.put_response(stored)
    read = await store.get_response("resp_1", "s")
    assert read is not None
    assert (read.id, read.model, read.created_at, read.events_key, read.checkpoint_id) == (
        "resp_1",
        "m",
        7,
        "run1",
        "",
    )
    assert (read.response, read.input_items, list(read.history)) == (response, items, [])
    assert await store.get_response("resp_1", "another owner") is None
    # A reader that changes what it read changes nothing kept.
    assert read.response is not None
    read.response["output"].clear()
    again = await store.get_response("resp_1", "s")
    assert again is not None
    assert again.response == response
    assert not await store.delete_response("resp_1", "another owner")
    assert await store.delete_response("resp_1", "s")
    assert await store.get_response("resp_1", "s") is None


async def test_retention_deletes_old_records_and_unused_threads() -> None:
    from datetime import timedelta

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from lgos.core.stored import StoredConversation
    from lgos.run.expiry import expire_stored_responses
    from tests.stateful.registry import counter_graph

    saver = InMemorySaver()
    graph = counter_graph(saver)
    await graph.ainvoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t1"}})
    store = InMemoryResponseStore()
    await store.put_response(
        StoredResponse(id="resp_old", owner_scope="s", model="m", created_at=1)
    )
    await store.put_response(StoredResponse(id="resp_new", owner_scope="s", model="m"))
    await store.put_conversation(StoredConversation(id="conv_old", owner_scope="s", updated_at=1))
    await store.touch_thread("t1")
    store._threads["t1"] = 1.0  # used long ago
    deleted = await expire_stored_responses(store, saver, older_than=timedelta(days=30))
    assert deleted == 2
    assert await store.get_response("resp_old", "s") is None
    assert await store.get_response("resp_new", "s") is not None
    assert await store.get_conversation("conv_old", "s") is None
    assert await saver.aget_tuple({"configurable": {"thread_id": "t1"}}) is None


async def test_retention_deletes_the_events_of_old_responses_where_they_are_kept() -> None:
    from datetime import timedelta

    from lgos.run.expiry import expire_stored_responses

    store = InMemoryResponseStore()
    event = {"type": "response.completed", "sequence_number": 1}
    # A background Response's events are kept under its engine run id, not its id.
    await store.put_response(
        StoredResponse(id="resp_old", owner_scope="s", model="m", created_at=1, events_key="run1")
    )
    await store.put_response(StoredResponse(id="resp_new", owner_scope="s", model="m"))
    await store.events.append("run1", [event])
    await store.events.append("resp_new", [event])
    assert await expire_stored_responses(store, None, older_than=timedelta(days=30)) == 1
    assert await store.events.read("run1", 0) == []
    assert await store.events.read("resp_new", 0) == [event]
