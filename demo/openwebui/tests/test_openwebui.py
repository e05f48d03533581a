"""Open WebUI in a real browser, chatting with real LGOS graphs through the LGOS Pipe.

Each test does what a user does (pick a model, type, press Enter, answer the review dialog,
press Stop), asserts on what the page shows, and saves a screenshot for the docs page.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from owui_support import Gateway, http_json, screenshot
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
    expect(status_line(page)).to_contain_text("in the background")
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


def status_line(page: Page) -> Any:
    """The status line under the model name of the (last) answer."""
    return page.get_by_role("button", name="Toggle status history").last


def test_simple_graph_streams_answer(page: Page, openwebui_url: str, user_valves: Any) -> None:
    user_valves()
    open_chat(page, openwebui_url, "lgos.simple-graph")
    send(page, "Hello from the browser")

    # The graph echoes the question in its answer, streamed through the Pipe.
    expect(last_answer(page)).to_contain_text("Hello from the browser")
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, "simple-graph")


def test_settings_from_valves_reach_the_graph(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    user_valves()
    open_chat(page, openwebui_url, "lgos.simple-graph")
    # Controls a user has in the chat: the model's Valves dialog, one row per graph setting.
    page.locator("#model-valves-button").click()
    dialog = page.get_by_role("dialog")
    audience = dialog.get_by_text("Audience", exact=True).locator("xpath=../..")
    audience.get_by_role("button", name="Default").click()  # switch to a custom value
    audience.get_by_role("textbox").fill("expert")
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


def test_plain_openai_connection_still_works(page: Page, openwebui_url: str) -> None:
    # The same graph through Open WebUI's own OpenAI connection (no Pipe involved).
    open_chat(page, openwebui_url, "simple-graph")
    send(page, "Hello over the plain connection")
    expect(last_answer(page)).to_contain_text("Hello over the plain connection")
    expect_finished(page)
    screenshot(page, "plain-connection")


def test_background_review_approved(page: Page, openwebui_url: str, user_valves: Any) -> None:
    user_valves(run_in_background=True, delay_seconds=0)
    open_chat(page, openwebui_url, "lgos.background-interrupt")
    send(page, TOPIC)

    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Confirm approves")
    screenshot(page, "review-dialog")
    dialog.get_by_role("button", name="Confirm").click()

    messages = page.locator("#messages-container")
    expect(messages).to_contain_text("Your answer: approve")
    expect(messages).to_contain_text(f"Background report for: {TOPIC}")
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, "review-approved")


def test_background_review_rejected(page: Page, openwebui_url: str, user_valves: Any) -> None:
    user_valves(run_in_background=True, delay_seconds=0)
    open_chat(page, openwebui_url, "lgos.background-interrupt")
    send(page, TOPIC)

    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()

    messages = page.locator("#messages-container")
    expect(messages).to_contain_text("Your answer: reject")
    expect(last_answer(page)).to_contain_text(re.compile("rejected", re.IGNORECASE))
    expect(messages).not_to_contain_text(f"Background report for: {TOPIC}")
    expect_finished(page)
    screenshot(page, "review-rejected")


def test_stop_cancels_background_run(
    page: Page, openwebui_url: str, lgos_url: str, user_valves: Any
) -> None:
    # Five minutes: the run can only end early if Stop cancels it.
    user_valves(run_in_background=True, delay_seconds=300)
    open_chat(page, openwebui_url, "lgos.background-mock")
    send(page, "A long report")

    response_id = background_response_id(page)
    page.get_by_role("button", name="Stop").click()
    expect(status_line(page)).to_have_text("Cancelled")
    expect_finished(page)
    screenshot(page, "stopped")
    # Stop cancels Open WebUI's task; the Pipe then cancels the Response on the server.
    assert_cancelled(f"{lgos_url}/responses/{response_id}")


def test_review_with_feedback_uses_input_dialog(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    # interruptible-approval also takes free text, so the Pipe asks in a text box.
    user_valves()
    open_chat(page, openwebui_url, "lgos.interruptible-approval")
    send(page, "Refund order 42")

    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Approve publishing 'Refund order 42'?")
    dialog.get_by_role("textbox").fill("Please add the order date")
    screenshot(page, "review-feedback")
    dialog.get_by_role("button", name="Confirm").click()

    expect(last_answer(page)).to_contain_text("your feedback was noted: Please add the order date")
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)


def test_deep_research_report_with_sources(
    page: Page, openwebui_url: str, user_valves: Any
) -> None:
    # The research plan is reviewed in a text box (it takes edits too); the report's
    # url_citation annotations become Open WebUI sources under the answer.
    user_valves(run_in_background=True, depth="quick")
    open_chat(page, openwebui_url, "lgos.deep-research")
    send(page, "Sea kites")

    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Approve this research plan")
    dialog.get_by_role("textbox").fill("approve")
    dialog.get_by_role("button", name="Confirm").click()

    expect(last_answer(page)).to_contain_text("Research report: Sea kites")
    expect(page.get_by_text(re.compile(r"^\d+ Sources?$"))).to_be_visible()
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, "deep-research")


def test_review_through_the_litellm_gateway(
    page: Page, openwebui_url: str, gateway: Gateway, user_valves: Any
) -> None:
    # Same flow as above, with the Pipe's base URL and key pointing at LiteLLM: the gateway
    # passes background creates, polls and the review answer through to LGOS.
    user_valves(gateway.function, run_in_background=True, delay_seconds=0)
    open_chat(page, openwebui_url, f"{gateway.function}.background-interrupt")
    send(page, TOPIC)

    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Confirm approves")
    dialog.get_by_role("button", name="Confirm").click()

    expect(last_answer(page)).to_contain_text(f"Background report for: {TOPIC}")
    expect(status_line(page)).to_have_text("Done")
    expect_finished(page)
    screenshot(page, "gateway-review-approved")


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
