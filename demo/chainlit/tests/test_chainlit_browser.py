"""The Chainlit app in headless Chromium against a real LGOS server.

Each test drives the page as a person would (log in, pick a model in the profile menu, change
settings in the settings panel, type, click) and asserts only on what the page shows. Each saves
a screenshot under build/screenshots/chainlit/ (`just docs-images` refreshes the copies
the docs page embeds, in docs/img/chainlit/).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

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

    def change_settings(
        self,
        *,
        background: bool | None = None,
        slider: str | int | None = None,
        select: dict[str, str] | None = None,
    ) -> None:
        """Open the settings panel; flip "Run in background"; move the slider to an end."""
        self.page.locator("#chat-settings-open-modal").click()
        dialog = self.page.get_by_role("dialog")
        for key, value in (select or {}).items():
            dialog.locator(f"#{key}").click()
            self.page.get_by_role("option", name=value, exact=True).click()
            expect(dialog.locator(f"#{key}")).to_contain_text(value)
        if background is not None:
            switch = dialog.locator("#lgos_ui_background")
            expect(switch).to_be_visible()
            if (switch.get_attribute("aria-checked") == "true") != background:
                switch.click()
            expect(switch).to_have_attribute("aria-checked", "true" if background else "false")
        if slider is not None:
            # Keyboard, as a person could: Home/End for the ends, Home then arrows for a value.
            thumb = dialog.get_by_role("slider")
            thumb.focus()
            if isinstance(slider, int):
                thumb.press("Home")
                for _ in range(slider):
                    thumb.press("ArrowRight")
                expected = str(slider)
            else:
                thumb.press("Home" if slider == "min" else "End")
                bound = "aria-valuemin" if slider == "min" else "aria-valuemax"
                expected = thumb.get_attribute(bound) or ""
            expect(thumb).to_have_attribute("aria-valuenow", expected)
        dialog.locator("#confirm").click()
        expect(dialog).to_be_hidden()

    def send(self, text: str) -> None:
        self.page.fill("#chat-input", text)
        # Right after login the socket may not be ready: wait for the button, then click it.
        submit = self.page.locator("#chat-submit")
        expect(submit).to_be_enabled()
        submit.click()
        expect(self.page.get_by_text(text, exact=True).first).to_be_visible()
        # The first message makes a persisted thread: the page moves to /thread/<id> and lists
        # the thread in the sidebar. Chainlit 2.12 may drop the shown messages when the next
        # one is sent during that move, so wait until the thread is listed (as a person would).
        expect(self.page).to_have_url(re.compile(r"/thread/[0-9a-f-]+$"))
        thread_id = self.page.url.rsplit("/", 1)[-1]
        expect(self.page.locator(f"#thread-{thread_id}")).to_be_visible()

    def answer_review(self, choice: str) -> None:
        expect(self.page.get_by_text(REVIEW).last).to_be_visible()
        self.page.get_by_role("button", name=choice, exact=True).click()

    def shot(self, directory: Path, flow: str) -> None:
        self.page.screenshot(path=str(directory / f"{flow}.png"), animations="disabled")


@pytest.fixture
def chat(chainlit, new_page, logs_dir: Path, request: pytest.FixtureRequest) -> Iterator[Chat]:
    chat = Chat(new_page(), chainlit.url)
    chat.login()
    yield chat
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        # What the page showed when the test failed, next to the process logs.
        shot = logs_dir / f"failed-{request.node.name}.png"
        chat.page.screenshot(path=str(shot), full_page=True)
        print(f"failure screenshot: {shot}")


def test_simple_graph_streams_the_answer(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("simple-graph")
    chat.send("Hello from Chainlit")
    expect(
        chat.page.get_by_text("Here is a short answer: you said 'Hello from Chainlit'.")
    ).to_be_visible()
    # A setting from the graph's schema (a select) changes the next answer.
    chat.change_settings(select={"audience": "expert"})
    chat.send("Second question")
    expect(chat.page.get_by_text("In precise terms: you said 'Second question'.")).to_be_visible()
    expect(chat.page.get_by_text("you said 'Hello from Chainlit'", exact=False)).to_be_visible()
    chat.shot(screenshot_dir, "simple-graph")


def test_commentary_is_a_step_apart_from_the_answer(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("status-events")
    chat.send("Hi there")
    answer = chat.page.get_by_text("Done looking into 'Hi there'.")
    expect(answer).to_be_visible()
    expect(answer).not_to_contain_text("Reading the question")
    # The graph's progress notes sit in one collapsed "Progress" step; opening it shows them.
    step = chat.page.get_by_role("button", name="Used Progress")
    expect(step).to_have_count(1)
    step.click()
    expect(chat.page.get_by_text("Reading the question")).to_be_visible()
    expect(chat.page.get_by_text("Looking things up")).to_be_visible()
    chat.shot(screenshot_dir, "commentary-steps")


def test_review_accepts_typed_feedback(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("interruptible-approval")
    chat.send("Launch plan")
    expect(chat.page.get_by_text("Approve publishing 'Launch plan'?", exact=False)).to_be_visible()
    expect(chat.page.get_by_text("type your feedback in the chat box", exact=False)).to_be_visible()
    chat.send("Please shorten it")
    expect(chat.page.get_by_text("Your answer: Please shorten it")).to_be_visible()
    expect(
        chat.page.get_by_text("Not published; your feedback was noted: Please shorten it")
    ).to_be_visible()
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    # The question stays in the conversation above the answer.
    expect(chat.page.get_by_text("Approve publishing 'Launch plan'?", exact=False)).to_be_visible()
    chat.shot(screenshot_dir, "review-feedback")


@pytest.mark.parametrize(
    ("choice", "outcome", "count"),
    [
        # The approved answer repeats the report the review showed: it is then on the page twice.
        ("Approve", "Background report for: Quarterly risks", 2),
        ("Reject", re.compile(r"rejected", re.I), 1),
    ],
)
def test_background_review(
    chat: Chat, screenshot_dir: Path, choice: str, outcome: str | re.Pattern[str], count: int
) -> None:
    chat.pick_model("background-interrupt")
    chat.change_settings(background=True, slider="min")  # delay_seconds = 0
    chat.send("Quarterly risks")
    # The status of the polled run stays on the page; here it ends completed with a review.
    expect(chat.page.get_by_text(re.compile(r"Background run: Completed"))).to_have_count(1)
    chat.answer_review(choice)
    expect(chat.page.get_by_text(f"Your answer: {choice.lower()}")).to_be_visible()
    # The continuation ran in the background too: a second status line, completed.
    expect(chat.page.get_by_text(re.compile(r"Background run: Completed"))).to_have_count(2)
    expect(chat.page.get_by_text(outcome, exact=True)).to_have_count(count)
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    chat.shot(screenshot_dir, f"background-review-{choice.lower()}")


def test_deep_research_plan_review_then_cited_report(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("deep-research")
    chat.send("Solar storage")  # foreground and streamed: the switch is off by default
    expect(chat.page.get_by_text("Approve this research plan", exact=False)).to_be_visible()
    expect(chat.page.get_by_text("Risks for 'Solar storage'", exact=False)).to_be_visible()
    chat.answer_review("Approve")
    expect(chat.page.get_by_role("heading", name="Research report: Solar storage")).to_be_visible()
    # The citations are links to the documents the report read.
    expect(chat.page.get_by_role("link", name="How the Aveline sea kites work")).to_have_attribute(
        "href", re.compile(r"^https://aveline-tidal\.example/")
    )
    chat.shot(screenshot_dir, "deep-research")


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


def test_background_result_arrives_after_a_reload(chat: Chat, screenshot_dir: Path) -> None:
    """Start background work, leave (reload), come back: the page picks the polling up."""
    chat.pick_model("background-mock")
    chat.change_settings(background=True, slider=12)  # delay_seconds = 12
    chat.send("Nightly numbers")
    expect(chat.page.get_by_text(re.compile(r"Background run: In progress"))).to_be_visible()
    chat.page.reload()
    # The old page is gone; only the resumed session can bring the result to this one.
    expect(chat.page.get_by_text("Nightly numbers", exact=True).first).to_be_visible()
    expect(chat.page.get_by_text("Background report for: Nightly numbers")).to_be_visible()
    expect(chat.page.get_by_text(re.compile(r"Background run: Completed"))).to_have_count(1)
    chat.shot(screenshot_dir, "background-after-reload")


def test_review_survives_reload_and_restart(
    chat: Chat, chainlit, lgos_server, screenshot_dir: Path
) -> None:
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
    # Chainlit crashes and starts again (and LGOS restarts when it keeps reviews in PostgreSQL):
    # the review comes back from Chainlit's PostgreSQL data layer and still resumes the run.
    chainlit.crash_and_restart()
    if lgos_server is not None and lgos_server.durable:
        lgos_server.restart()
    chat.page.reload()
    expect(chat.page.get_by_text(REVIEW).last).to_be_visible()
    chat.answer_review("Approve")
    expect(chat.page.get_by_text(re.compile(r"Background run: Completed"))).to_have_count(2)
    report = chat.page.get_by_text("Background report for: Reload safety", exact=True)
    expect(report).to_have_count(2)  # in the review and as the answer
    expect(chat.page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    chat.shot(screenshot_dir, "review-after-restart")
