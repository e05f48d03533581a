"""Open WebUI in a real browser, chatting with real LGOS graphs through the LGOS Pipe.

Each test does what a user does (pick a model, type, press Enter, answer the review card,
press Stop), asserts on what the page shows, and saves a screenshot under
build/screenshots/openwebui/ (`just docs-images` copies them into the docs).
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from owui_support import Gateway, OpenWebUI, http_json, screenshot
from playwright.sync_api import Page, expect

# Starts real processes (or a browser): slower than the suite-wide timeout on a busy host.
pytestmark = pytest.mark.timeout(900)

TOPIC = "Quarterly risks"


def open_chat(page: Page, url: str, model: str) -> None:
    page.goto(f"{url}/?models={model}", wait_until="domcontentloaded")
    expect(page.locator("#chat-input")).to_be_visible()


def send(page: Page, text: str) -> None:
    # The chat box is a contenteditable editor, not an <input>: type into it like a user.
    page.locator("#chat-input").click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def last_answer(page: Page) -> Any:
    """The text of the last assistant message (without its model name and status line)."""
    return page.locator("#messages-container #response-content-container").last


def expect_finished(page: Page) -> None:
    """Open WebUI turns the Stop button back into the send/voice button when a reply ends."""
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()


def background_response_id(page: Page) -> str:
    """The id of the running background Response, read from the message's status history."""
    expect(status_line(page)).to_contain_text(re.compile(r"Queued|Running"))
    status_line(page).click()  # unfolds the history, whose first line names the Response
    started = page.get_by_text(re.compile(r"Started background run \S+")).first
    expect(started).to_be_visible()
    return started.inner_text().split()[-1]


def assert_cancelled(url: str, key: str | None = None) -> None:
    """The server reports the Response cancelled (the Pipe's cancel may land a moment later)."""
    deadline = time.monotonic() + 30
    status = None
    while time.monotonic() < deadline:
        status = http_json("GET", url, token=key)["status"]
        if status == "cancelled":
            break
        time.sleep(0.2)
    assert status == "cancelled"


def review_card(page: Page) -> Any:
    """Open WebUI's question card, under the message that asks (not a modal dialog)."""
    return page.locator("section").filter(has_text="Submit answers").last


def chat_content(url: str, token: str, page: Page) -> str:
    """The last assistant message as Open WebUI stored it (its raw markdown)."""
    chat_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    chat = http_json("GET", f"{url}/api/v1/chats/{chat_id}", token=token)["chat"]
    messages = chat["history"]["messages"]
    return str(messages[chat["history"]["currentId"]]["content"])


def status_line(page: Page) -> Any:
    """The status line under the model name of the (last) answer."""
    return page.get_by_role("button", name="Toggle status history").last


def test_first_page_has_no_modal_and_offers_the_graph_starters(
    page: Page, openwebui_url: str
) -> None:
    page.goto(openwebui_url, wait_until="domcontentloaded")
    # The starters of the default model (simple-graph) load with the page's config: by then a
    # "What's New" modal would be open.
    expect(page.get_by_role("button", name=re.compile("Say hello"))).to_be_visible()
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_text("What's New", exact=False)).to_have_count(0)
    expect(page.get_by_text("Roman Empire", exact=False)).to_have_count(0)
    screenshot(page, "welcome")
    # Each graph brings its own starters.
    open_chat(page, openwebui_url, "lgos.deep-research")
    expect(page.get_by_role("button", name=re.compile("How the sea kites work"))).to_be_visible()
    expect(page.get_by_role("dialog")).to_have_count(0)


def test_simple_graph_streams_answer(
    page: Page, openwebui_url: str, user_valves: Any, timings: Any
) -> None:
    user_valves()
    open_chat(page, openwebui_url, "lgos.simple-graph")
    started = time.monotonic()
    send(page, "Hello from the browser")

    # The graph echoes the question in its answer, streamed through the Pipe.
    expect(last_answer(page)).to_contain_text("Hello from the browser")
    timings.record("simple answer", started)
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, "simple-graph")


def test_enum_setting_is_a_select_that_reaches_the_graph(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    user_valves()
    open_chat(page, openwebui_url, "lgos.simple-graph")
    # Controls a user has in the chat: the model's Valves dialog, one row per graph setting.
    page.locator("#model-valves-button").click()
    dialog = page.get_by_role("dialog")
    audience = dialog.get_by_text("Audience", exact=True).locator("xpath=../..")
    audience.get_by_role("button", name="Default").click()  # switch to a custom value
    # An enum is a select over the graph's values: "pirate" cannot even be typed.
    select = audience.get_by_role("combobox")
    expect(select.locator("option")).to_have_text(["general", "expert", "child"])
    select.select_option("expert")
    screenshot(page, "valves")
    dialog.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Valves updated successfully")).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()

    send(page, "What is a graph?")
    # simple-graph words its answer by audience: "In precise terms" is the expert tone.
    expect(last_answer(page)).to_contain_text("In precise terms")
    expect(last_answer(page)).to_contain_text("What is a graph?")
    expect_finished(page)
    screenshot(page, "settings")


def test_out_of_range_setting_is_explained_with_the_allowed_values(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    # What a user can save in the Valves dialog: a number outside the graph's range.
    user_valves(delay_seconds=999)
    open_chat(page, openwebui_url, "lgos.background-mock")
    send(page, "Too slow")
    answer = last_answer(page)
    # LGOS's own message, not a gateway's JSON, and where to fix it with what is allowed.
    expect(answer).to_contain_text("delay_seconds")
    expect(answer).to_contain_text("300")
    expect(answer).to_contain_text("Controls → Valves")
    expect(answer).to_contain_text("delay_seconds: 0 to 300")
    expect(answer).not_to_contain_text("{")
    expect_finished(page)
    screenshot(page, "invalid-setting")
    # The setting is not silently replaced by the default: nothing ran.
    expect(answer).not_to_contain_text("Background report for")


@pytest.mark.parametrize(
    ("choice", "outcome"),
    [("Approve", f"Background report for: {TOPIC}"), ("Reject", "was rejected")],
)
def test_background_review_card(
    page: Page, openwebui_url: str, user_valves: Any, choice: str, outcome: str, timings: Any
) -> None:
    user_valves(run_in_background=True, delay_seconds=0)
    open_chat(page, openwebui_url, "lgos.background-interrupt")
    started = time.monotonic()
    send(page, TOPIC)

    card = review_card(page)
    expect(card).to_contain_text("Approve the prepared report?")
    timings.record("review appears", started)
    expect(card.get_by_role("button", name=re.compile("^Approve"))).to_be_visible()
    expect(card.get_by_role("button", name=re.compile("^Reject"))).to_be_visible()
    # The card sits in the chat, not in a modal; the answer shows what is being reviewed.
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(last_answer(page)).to_contain_text("Waiting for your review")
    expect(last_answer(page)).to_contain_text(f"Background report for: {TOPIC}")
    expect(status_line(page)).to_have_text("Waiting for your review")
    if choice == "Approve":
        screenshot(page, "review-card")
    started = time.monotonic()
    card.get_by_role("button", name=re.compile(f"^{choice}")).click()

    expect(card).to_be_hidden()
    answer = last_answer(page)
    expect(answer).to_contain_text(
        re.compile(rf"Your answer: {choice.lower()} · \d\d:\d\d:\d\d UTC")
    )
    expect(answer).to_contain_text(outcome)
    timings.record("approve → report" if choice == "Approve" else "reject → answer", started)
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, f"review-{choice.lower()}")


def test_review_card_takes_free_text(page: Page, openwebui_url: str, user_valves: Any) -> None:
    # interruptible-approval also takes free text: the card has an "Other" answer.
    user_valves()
    open_chat(page, openwebui_url, "lgos.interruptible-approval")
    send(page, "Refund order 42")

    card = review_card(page)
    expect(card).to_contain_text("Approve publishing 'Refund order 42'?")
    other = card.get_by_placeholder("Type your answer")
    other.fill("Please add the order date")
    screenshot(page, "review-feedback")
    other.press("Enter")

    answer = last_answer(page)
    expect(answer).to_contain_text("Your answer: Please add the order date")
    expect(answer).to_contain_text("your feedback was noted: Please add the order date")
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)


def test_dismissing_the_card_leaves_the_review_pending(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    user_valves()
    open_chat(page, openwebui_url, "lgos.interruptible-approval")
    send(page, "Dismissed plan")
    card = review_card(page)
    expect(card).to_be_visible()
    card.get_by_role("button", name="Cancel").click()

    answer = last_answer(page)
    # Dismissing is not an answer: nothing was published nor rejected.
    expect(answer).to_contain_text("The review is still waiting")
    expect(answer).not_to_contain_text("Published")
    expect(answer).not_to_contain_text("Rejected")
    expect(status_line(page)).to_have_text("Waiting for your review")
    expect_finished(page)
    screenshot(page, "review-dismissed")
    # A reply in the chat answers the waiting review.
    send(page, "approve")
    expect(last_answer(page)).to_contain_text("Published 'Dismissed plan'.")


def test_refused_answer_shows_the_graph_message_and_asks_again(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    user_valves(run_in_background=True, delay_seconds=0)
    open_chat(page, openwebui_url, "lgos.background-interrupt")
    send(page, "Typo check")
    review_card(page).get_by_role("button", name="Cancel").click()
    expect(last_answer(page)).to_contain_text("The review is still waiting")
    # A typo: this graph accepts only approve or reject, and says so.
    send(page, "maybe")
    answer = last_answer(page)
    expect(answer).to_contain_text("The answer was not accepted")
    expect(answer).to_contain_text("'approve' or 'reject'")
    card = review_card(page)
    expect(card).to_contain_text("Approve the prepared report?")
    screenshot(page, "review-refused")
    card.get_by_role("button", name=re.compile("^Approve")).click()
    expect(last_answer(page)).to_contain_text("Background report for: Typo check")
    expect(status_line(page)).to_have_text("Done")


def test_stop_cancels_background_run(
    page: Page,
    openwebui_url: str,
    lgos_url: str,
    lgos_key: str | None,
    user_valves: Any,
    timings: Any,
) -> None:
    # Five minutes: the run can only end early if Stop cancels it.
    user_valves(run_in_background=True, delay_seconds=300)
    open_chat(page, openwebui_url, "lgos.background-mock")
    send(page, "A long report")

    # The step the graph reports is on the status line, with the time since the create.
    expect(status_line(page)).to_have_text(re.compile(r"Running \(\d+ s\) · Preparing the report"))
    response_id = background_response_id(page)
    started = time.monotonic()
    page.get_by_role("button", name="Stop").click()
    expect(status_line(page)).to_have_text("Cancelled")
    timings.record("stop → cancelled", started)
    expect_finished(page)
    screenshot(page, "stopped")
    # Stop cancels Open WebUI's task; the Pipe then cancels the Response on the server.
    assert_cancelled(f"{lgos_url}/responses/{response_id}", lgos_key)


def test_timer_counts_while_no_worker_takes_the_run(
    page: Page, openwebui_url: str, idle_function: str, user_valves: Any
) -> None:
    user_valves(idle_function, run_in_background=True)
    open_chat(page, openwebui_url, f"{idle_function}.background-mock")
    send(page, "Nobody home")
    line = status_line(page)
    expect(line).to_have_text(re.compile(r"^Queued \(\d+ s\)"))
    # Counted from the Response's created_at: it moves while the run waits, and says why.
    expect(line).to_have_text(
        re.compile(r"^Queued \(([3-9]|\d\d+) s\) · no worker has picked this up for \d+ s$")
    )
    screenshot(page, "queued-no-worker")
    page.get_by_role("button", name="Stop").click()
    expect(line).to_have_text("Cancelled")


def test_deep_research_chip_n_names_document_n(
    page: Page, openwebui_url: str, admin_token: str, user_valves: Any, timings: Any
) -> None:
    user_valves(run_in_background=True, depth="quick")
    open_chat(page, openwebui_url, "lgos.deep-research")
    send(page, "Sea kites")

    card = review_card(page)
    expect(card).to_contain_text("Approve this research plan")
    started = time.monotonic()
    card.get_by_role("button", name=re.compile("^Approve")).click()

    answer = last_answer(page)
    expect(answer).to_contain_text("Research report: Sea kites")
    timings.record("deep-research approve → report", started)
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    # The report numbers its documents in its own Sources list ("n. [title](url)"), and
    # cites them with [n] markers that Open WebUI draws as chips naming a source.
    content = chat_content(openwebui_url, admin_token, page)
    report = content[content.index("Research report") :]
    listed = dict(re.findall(r"^(\d+)\. \[([^\]]+)\]\(", report, re.M))
    body = report[: report.index("## Sources")]
    markers = [int(n) for n in re.findall(r"\[(\d+)\]", body)]
    assert len(set(markers)) >= 2, markers
    chips = answer.get_by_role("button", name=re.compile(r"^View source: "))
    expect(chips).to_have_count(len(markers))
    names = [
        str(chip.get_attribute("aria-label")).removeprefix("View source: ") for chip in chips.all()
    ]
    assert names == [listed[str(n)] for n in markers]
    screenshot(page, "deep-research")


def test_review_through_the_litellm_gateway(
    page: Page, openwebui_url: str, gateway: Gateway, user_valves: Any
) -> None:
    # Same flow as above, with the Pipe's base URL and key pointing at LiteLLM: the gateway
    # passes background creates, streams and the review answer through to LGOS.
    user_valves(gateway.function, run_in_background=True, delay_seconds=0)
    open_chat(page, openwebui_url, f"{gateway.function}.background-interrupt")
    send(page, TOPIC)

    card = review_card(page)
    expect(card).to_contain_text("Approve the prepared report?")
    card.get_by_role("button", name=re.compile("^Approve")).click()

    expect(last_answer(page)).to_contain_text(f"Background report for: {TOPIC}")
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, "gateway-review-approved")


def test_gateway_errors_show_the_lgos_message(
    page: Page, openwebui_url: str, gateway: Gateway, user_valves: Any
) -> None:
    user_valves(gateway.function, delay_seconds=999)
    open_chat(page, openwebui_url, f"{gateway.function}.background-mock")
    send(page, "Too slow through the gateway")
    answer = last_answer(page)
    expect(answer).to_contain_text("delay_seconds")
    expect(answer).not_to_contain_text("litellm.BadRequestError")
    expect(answer).not_to_contain_text("OpenAIException")
    expect_finished(page)


def test_stop_through_the_litellm_gateway(
    page: Page, openwebui_url: str, gateway: Gateway, user_valves: Any
) -> None:
    user_valves(gateway.function, run_in_background=True, delay_seconds=300)
    open_chat(page, openwebui_url, f"{gateway.function}.background-mock")
    send(page, "A long report through the gateway")

    response_id = background_response_id(page)
    page.get_by_role("button", name="Stop").click()
    expect(status_line(page)).to_have_text("Cancelled")
    expect_finished(page)
    # The id is LiteLLM's (it encodes the LGOS one); ask the gateway, as a client would.
    assert_cancelled(f"{gateway.url}/responses/{response_id}", gateway.key)


def test_a_waiting_review_survives_an_openwebui_restart(
    page: Page, openwebui: OpenWebUI, user_valves: Any
) -> None:
    # Last in this file: the restart keeps the port and the data, so later tests would be fine,
    # but the tests above need not wait for it.
    user_valves()
    open_chat(page, openwebui.url, "lgos.interruptible-approval")
    send(page, "Plan across a restart")
    review_card(page).get_by_role("button", name="Cancel").click()
    expect(last_answer(page)).to_contain_text("The review is still waiting")
    expect_finished(page)

    openwebui.restart()
    page.reload(wait_until="domcontentloaded")
    expect(page.locator("#chat-input")).to_be_visible()
    # The reply still answers the review the graph is waiting on (it would otherwise start
    # a new run, with "approve" as its plan).
    send(page, "approve")
    expect(last_answer(page)).to_contain_text("Published 'Plan across a restart'.")
