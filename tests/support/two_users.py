"""Two users of each chat UI, in a real browser, through the reference stack's gateway: Bob
never reaches Alice's review, chat or background run, neither in the UI nor through the
gateway with Alice's ids (as the UI's server would send them for Bob, and with a forged owner
header besides), and Alice still answers her review and stops her run.

The chain under test: the UI names its signed-in user to LiteLLM (Chainlit in
x-litellm-end-user-id, the Open WebUI Pipe in X-OpenWebUI-User-Id), LiteLLM's lgos_owner hook
passes LiteLLM's end user to LGOS in x-lgos-user and strips any copy a client sent, and LGOS
(the gateway's key plus that header) keeps each user's objects apart (docs/security.md).

The same flows run on the local processes (tests/ui/users) and on `docker compose up`
(tests/compose/test_stack.py): a `UserStack` says where each piece answers.
"""

from __future__ import annotations

import json
import re
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import psycopg
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import loopback_context
from tests.support.chainlit_page import Chat
from tests.support.openwebui_page import (
    DELAY,
    change_settings,
    expect_finished,
    http_json,
    last_answer,
    log_in,
    open_chat,
    review_card,
    send,
    status_line,
)
from tests.support.stack_auth import LITELLM_DEV_KEY, USER_HEADER

VIEWPORT = {"width": 1280, "height": 900}
DEADLINE_SECONDS = 60.0


@dataclass(frozen=True)
class Person:
    """A signed-in user of one UI: what they type to log in, and how the UI's server names
    them to the gateway (the header and value LiteLLM reads as the end user)."""

    login: str
    password: str
    header: str
    value: str


@dataclass
class UserStack:
    """Where the stack answers, and its two users of each UI."""

    gateway_url: str
    chainlit_url: str
    chainlit_database: str  # Chainlit's own, where a thread's pending review is kept
    openwebui_url: str
    chainlit_users: tuple[Person, Person]
    openwebui_users: tuple[Person, Person]
    openwebui_tokens: dict[str, str]  # each Open WebUI user's session token, by login
    # The text of the Pipe's lgos_pending_reviews.json, in Open WebUI's data folder.
    read_waiting_reviews: Callable[[], str]


def openwebui_users(
    url: str, admin_email: str, admin_password: str
) -> tuple[tuple[Person, Person], dict[str, str]]:
    """Two plain users the admin adds (as under Admin Panel > Users), each with the changelog
    already seen, so that their first page is the chat."""
    credentials = {"email": admin_email, "password": admin_password}
    admin = http_json("POST", f"{url}/api/v1/auths/signin", credentials)
    people, tokens = [], {}
    for name in ("alice", "bob"):
        email, password = f"{name}@example.com", f"{name}-{secrets.token_hex(4)}"
        added = http_json(
            "POST",
            f"{url}/api/v1/auths/add",
            {"name": name.title(), "email": email, "password": password, "role": "user"},
            admin["token"],
        )
        token = http_json(
            "POST", f"{url}/api/v1/auths/signin", {"email": email, "password": password}
        )["token"]
        version = http_json("GET", f"{url}/api/config", token=token).get("version")
        http_json(
            "POST", f"{url}/api/v1/users/user/settings/update", {"ui": {"version": version}}, token
        )
        people.append(Person(email, password, "x-openwebui-user-id", str(added["id"])))
        tokens[email] = token
    return (people[0], people[1]), tokens


def as_person(person: Person, **forged: str) -> dict[str, str]:
    """The headers a UI's server sends the gateway for `person` (plus any `forged` ones)."""
    return {"Authorization": f"Bearer {LITELLM_DEV_KEY}", person.header: person.value, **forged}


def gateway_attempts(
    stack: UserStack, person: Person, review_id: str, call_id: str, run_id: str, **forged: str
) -> dict[str, int]:
    """Everything `person` could try with another user's ids through the gateway: read the
    review and the run, list the review's input, answer the review, cancel the run."""
    headers = as_person(person, **forged)
    base = stack.gateway_url
    answer = {
        "model": "interruptible-approval",
        "previous_response_id": review_id,
        "input": [{"type": "function_call_output", "call_id": call_id, "output": "approve"}],
    }
    with httpx2.Client(headers=headers, timeout=60) as http:
        return {
            "read the review": http.get(f"{base}/responses/{review_id}").status_code,
            "list its input": http.get(f"{base}/responses/{review_id}/input_items").status_code,
            "read the run": http.get(f"{base}/responses/{run_id}").status_code,
            "answer the review": http.post(f"{base}/responses", json=answer).status_code,
            "cancel the run": http.post(f"{base}/responses/{run_id}/cancel").status_code,
        }


def assert_refused(attempts: dict[str, int]) -> None:
    # What LGOS answers for an unknown id: 404, and 409 for an answer to a review it does not
    # know (the same as for an id that never existed: no existence oracle).
    refused = {"answer the review": 409}
    wrong = {what: status for what, status in attempts.items() if status != refused.get(what, 404)}
    assert not wrong, wrong


def run_status(stack: UserStack, person: Person, run_id: str) -> str:
    reply = httpx2.get(
        f"{stack.gateway_url}/responses/{run_id}", headers=as_person(person), timeout=60
    )
    assert reply.status_code == 200, reply.text
    return str(reply.json()["status"])


def eventually(what: str, found: Any) -> Any:
    """`found()` once it returns something, within the deadline."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while (value := found()) is None:
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE_SECONDS:.0f} s"
        time.sleep(0.2)
    return value


# ---------------------------------------------------------------------------------- Chainlit


def chainlit_page(browser: Browser, stack: UserStack, person: Person) -> Chat:
    chat = Chat(loopback_context(browser, viewport=VIEWPORT).new_page(), stack.chainlit_url)
    chat.login(person.login, person.password)
    return chat


def thread_metadata(stack: UserStack, thread_id: str, key: str) -> Any:
    """A value the Chainlit app keeps in a thread's metadata (its pending review, the
    background run it polls), from Chainlit's database; None until it is there."""
    with psycopg.connect(stack.chainlit_database) as conn:
        row = conn.execute('SELECT metadata FROM "Thread" WHERE id = %s', (thread_id,)).fetchone()
    metadata = row[0] if row else None
    if isinstance(metadata, str):
        metadata = json.loads(metadata)
    return (metadata or {}).get(key)


def thread_of(chat: Chat) -> str:
    expect(chat.page).to_have_url(re.compile(r"/thread/[0-9a-f-]+$"))
    return chat.page.url.rsplit("/", 1)[-1]


def chainlit_users_stay_apart(user_stack: UserStack, users_browser: Browser) -> None:
    alice, bob = user_stack.chainlit_users
    # Alice: a review waiting for her, and a background run of five minutes.
    review = chainlit_page(users_browser, user_stack, alice)
    review.pick_model("interruptible-approval")
    review.send("Alice plan")
    expect(review.card()).to_have_attribute("data-state", "pending")
    review_thread = thread_of(review)
    pending = eventually(
        "pending review", lambda: thread_metadata(user_stack, review_thread, "lgos_pending_review")
    )
    review_id, call_id = pending["response_id"], pending["calls"][0]["call_id"]
    report = chainlit_page(users_browser, user_stack, alice)
    report.pick_model("background-mock")
    report.change_settings(background=True, slider="max")  # delay_seconds = 300
    report.send("Alice report")
    expect(report.page.get_by_text(re.compile(r"Background run: In progress"))).to_be_visible()
    report_thread = thread_of(report)
    polled = eventually(
        "polled run", lambda: thread_metadata(user_stack, report_thread, "lgos_polled_run")
    )
    run_id = polled["response_id"]

    # Bob, in the UI: his own thread is listed, none of Alice's; her thread's page shows him
    # nothing of hers.
    intruder = chainlit_page(users_browser, user_stack, bob)
    intruder.pick_model("simple-graph")
    intruder.send("Bob question")
    expect(intruder.page.locator(f"#thread-{thread_of(intruder)}")).to_be_visible()
    for thread in (review_thread, report_thread):
        expect(intruder.page.locator(f"#thread-{thread}")).to_have_count(0)
    intruder.page.goto(f"{user_stack.chainlit_url}/thread/{review_thread}")
    expect(intruder.page.locator("#chat-input")).to_be_visible()
    expect(intruder.page.get_by_text("Alice plan")).to_have_count(0)
    expect(intruder.page.locator("[id^='review-']")).to_have_count(0)

    # Bob through the gateway with Alice's ids, as Chainlit's server sends for him, then with
    # a forged owner header and a forged end user as well: all refused.
    assert_refused(gateway_attempts(user_stack, bob, review_id, call_id, run_id))
    forged = {USER_HEADER: alice.value}
    assert_refused(gateway_attempts(user_stack, bob, review_id, call_id, run_id, **forged))
    assert run_status(user_stack, alice, run_id) == "in_progress"

    # Alice still answers her review and stops her run, in the browser.
    review.answer_review("Approve")
    review.expect_answered("approve")
    expect(review.page.get_by_text("Published 'Alice plan'.")).to_be_visible()
    report.page.locator("#stop-button").click()
    expect(report.page.get_by_text(re.compile(r"Background run: Cancelled"))).to_be_visible()
    assert run_status(user_stack, alice, run_id) == "cancelled"


# -------------------------------------------------------------------------------- Open WebUI


def openwebui_page(browser: Browser, stack: UserStack, person: Person) -> Page:
    """A browser where `person` logged in on Open WebUI's sign-in page."""
    page = loopback_context(browser, viewport=VIEWPORT).new_page()
    log_in(page, stack.openwebui_url, person.login, person.password)
    return page


def chat_id_of(page: Page) -> str:
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]+"))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def stored_messages(stack: UserStack, person: Person, chat_id: str) -> list[dict[str, Any]]:
    token = stack.openwebui_tokens[person.login]
    chat = http_json("GET", f"{stack.openwebui_url}/api/v1/chats/{chat_id}", token=token)
    return list(chat["chat"]["history"]["messages"].values())


def background_run_id(stack: UserStack, person: Person, chat_id: str) -> str | None:
    """The background Response the Pipe follows in this chat (kept in the status history)."""
    for message in stored_messages(stack, person, chat_id):
        for status in message.get("statusHistory") or []:
            if status.get("response_id"):
                return str(status["response_id"])
    return None


def waiting_review(stack: UserStack, chat_id: str) -> dict[str, Any] | None:
    """The review the Pipe keeps waiting for this chat (lgos_pending_reviews.json)."""
    text = stack.read_waiting_reviews()
    entries = json.loads(text) if text.strip() else {}
    return next((entry for key, entry in entries.items() if key.endswith(f" {chat_id}")), None)


def openwebui_users_stay_apart(user_stack: UserStack, users_browser: Browser) -> None:
    alice, bob = user_stack.openwebui_users
    # Alice: a review waiting for her, and a background run of five minutes.
    review = openwebui_page(users_browser, user_stack, alice)
    open_chat(review, user_stack.openwebui_url, "lgos.interruptible-approval")
    send(review, "Alice plan")
    expect(review_card(review)).to_contain_text("Approve publishing 'Alice plan'?")
    review_chat = chat_id_of(review)
    waiting = eventually("waiting review", lambda: waiting_review(user_stack, review_chat))
    review_id, call_id = waiting["response_id"], waiting["calls"][0]["call_id"]
    report = openwebui_page(users_browser, user_stack, alice)
    open_chat(report, user_stack.openwebui_url, "lgos.background-mock")
    # Five minutes, in the background (this graph's own choice): still running when Bob tries.
    change_settings(report, {DELAY: "300"})
    send(report, "Alice report")
    expect(status_line(report)).to_have_text("Running · Preparing the report")
    report_chat = chat_id_of(report)
    run_id = eventually("background run", lambda: background_run_id(user_stack, alice, report_chat))

    # Bob, in the UI: his own chat is listed, none of Alice's; her chat's address shows him
    # nothing of hers, and Open WebUI refuses him her stored chat.
    intruder = openwebui_page(users_browser, user_stack, bob)
    open_chat(intruder, user_stack.openwebui_url, "lgos.simple-graph")
    send(intruder, "Bob question")
    expect(last_answer(intruder)).to_contain_text("Bob question")
    expect_finished(intruder)
    own_chat = chat_id_of(intruder)
    expect(intruder.locator(f"a[href='/c/{own_chat}']")).to_be_visible()
    for chat in (review_chat, report_chat):
        expect(intruder.locator(f"a[href='/c/{chat}']")).to_have_count(0)
        with pytest.raises(urllib.error.HTTPError) as refused:
            stored_messages(user_stack, bob, chat)
        assert refused.value.code in (401, 403, 404), refused.value
    intruder.goto(f"{user_stack.openwebui_url}/c/{review_chat}", wait_until="domcontentloaded")
    expect(intruder.locator("#chat-input")).to_be_visible()
    expect(intruder.get_by_text("Alice plan")).to_have_count(0)

    # Bob through the gateway with Alice's ids, as the Pipe sends for him, then with a forged
    # owner header as well: all refused.
    assert_refused(gateway_attempts(user_stack, bob, review_id, call_id, run_id))
    forged = {USER_HEADER: alice.value}
    assert_refused(gateway_attempts(user_stack, bob, review_id, call_id, run_id, **forged))
    assert run_status(user_stack, alice, run_id) == "in_progress"

    # Alice still answers her review and stops her run, in the browser.
    card = review_card(review)
    card.get_by_role("button", name=re.compile("^Approve")).click()
    expect(last_answer(review)).to_contain_text("Published 'Alice plan'.")
    report.get_by_role("button", name="Stop").click()
    expect(status_line(report)).to_have_text("Cancelled")
    assert run_status(user_stack, alice, run_id) == "cancelled"
