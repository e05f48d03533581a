"""The Chainlit app in headless Chromium against a real LGOS server.

Each test drives the page as a person would (log in, pick a model in the profile menu, change
settings in the settings panel, type, click) and asserts only on what the page shows. Each saves
a screenshot under docs/img/chainlit/ that the docs page embeds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.slow]

REVIEW = re.compile(r"Review needed")


class Chat:
    """What a user does in the Chainlit page, in words of the page."""

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.url = url

    def login(self) -> None:
        self.page.goto(self.url)
        self.page.fill("#email", "demo")
        self.page.fill("#password", "demo")
        self.page.get_by_role("button", name=re.compile("continue|sign in|log ?in", re.I)).click()
        expect(self.page.locator("#chat-input")).to_be_visible()

    def pick_model(self, model: str) -> None:
        self.page.locator("#chat-profiles").click()
        self.page.get_by_role("option", name=model, exact=True).click()
        expect(self.page.locator("#chat-profiles")).to_contain_text(model)

    def change_settings(self, *, background: bool | None = None, slider: str | None = None) -> None:
        """Open the settings panel; flip "Run in background"; move the slider to an end."""
        self.page.locator("#chat-settings-open-modal").click()
        dialog = self.page.get_by_role("dialog")
        if background is not None:
            switch = dialog.locator("#lgos_ui_background")
            expect(switch).to_be_visible()
            if (switch.get_attribute("aria-checked") == "true") != background:
                switch.click()
            expect(switch).to_have_attribute("aria-checked", "true" if background else "false")
        if slider is not None:
            thumb = dialog.get_by_role("slider")
            thumb.focus()
            thumb.press("Home" if slider == "min" else "End")
            expected = thumb.get_attribute("aria-valuemin" if slider == "min" else "aria-valuemax")
            expect(thumb).to_have_attribute("aria-valuenow", expected or "")
        dialog.locator("#confirm").click()
        expect(dialog).to_be_hidden()

    def send(self, text: str) -> None:
        self.page.fill("#chat-input", text)
        # Right after login the socket may not be ready: wait for the button, then click it.
        submit = self.page.locator("#chat-submit")
        expect(submit).to_be_enabled()
        submit.click()
        expect(self.page.get_by_text(text, exact=True).first).to_be_visible()

    def answer_review(self, choice: str) -> None:
        expect(self.page.get_by_text(REVIEW).last).to_be_visible()
        self.page.get_by_role("button", name=choice, exact=True).click()

    def shot(self, directory: Path, flow: str) -> None:
        self.page.screenshot(path=str(directory / f"{flow}.png"))


@pytest.fixture
def chat(chainlit, new_page) -> Chat:
    chat = Chat(new_page(), chainlit.url)
    chat.login()
    return chat


def test_simple_graph_streams_the_answer(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("simple-graph")
    chat.send("Hello from Chainlit")
    answer = chat.page.locator(".step").filter(has_not_text="Hello from Chainlit").last
    expect(answer).to_be_visible()
    expect(chat.page.get_by_text(re.compile(r"Hello from Chainlit", re.I)).last).to_be_visible()
    chat.shot(screenshot_dir, "simple-graph")


@pytest.mark.parametrize(
    ("choice", "outcome"),
    [
        ("Approve", re.compile(r"Background report for: Quarterly risks")),
        ("Reject", re.compile(r"rejected", re.I)),
    ],
)
def test_background_review(
    chat: Chat, screenshot_dir: Path, choice: str, outcome: re.Pattern[str]
) -> None:
    chat.pick_model("background-interrupt")
    chat.change_settings(background=True, slider="min")  # delay_seconds = 0
    chat.send("Quarterly risks")
    # The status of the polled run stays on the page; here it ends completed with a review.
    expect(chat.page.get_by_text(re.compile(r"Background run: Completed"))).to_be_visible()
    chat.answer_review(choice)
    expect(chat.page.get_by_text(f"Your answer: {choice.lower()}")).to_be_visible()
    expect(chat.page.get_by_text(outcome).last).to_be_visible()
    # The continuation ran in the background too: a second status line, completed.
    expect(chat.page.get_by_text(re.compile(r"Background run: Completed"))).to_have_count(2)
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    chat.shot(screenshot_dir, f"background-review-{choice.lower()}")


def test_stop_cancels_a_background_run(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("background-mock")
    chat.change_settings(background=True, slider="max")  # delay_seconds = 300
    chat.send("A very long report")
    expect(chat.page.get_by_text(re.compile(r"Background run: In progress"))).to_be_visible()
    chat.page.locator("#stop-button").click()
    expect(chat.page.get_by_text("Run cancelled.")).to_be_visible()
    expect(chat.page.get_by_text(re.compile(r"Background run: Cancelled"))).to_be_visible()
    expect(chat.page.get_by_text(re.compile(r"Background report for"))).to_have_count(0)
    chat.shot(screenshot_dir, "stop-background")


def test_review_survives_reload_and_restart(chat: Chat, chainlit, screenshot_dir: Path) -> None:
    chat.pick_model("background-interrupt")
    chat.change_settings(background=True, slider="min")
    chat.send("Reload safety")
    expect(chat.page.get_by_text(REVIEW).last).to_be_visible()
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    # A reload opens the thread again (the URL is /thread/<id>): the review is still pending.
    expect(chat.page).to_have_url(re.compile(r"/thread/"))
    chat.page.reload()
    expect(chat.page.get_by_text(REVIEW).last).to_be_visible()
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    chat.shot(screenshot_dir, "review-after-reload")
    # Chainlit itself restarts: the review comes back from PostgreSQL.
    chainlit.restart()
    chat.page.reload()
    expect(chat.page.get_by_text(REVIEW).last).to_be_visible()
    chat.answer_review("Approve")
    expect(chat.page.get_by_text("Background report for: Reload safety").last).to_be_visible()
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    chat.shot(screenshot_dir, "review-after-restart")
