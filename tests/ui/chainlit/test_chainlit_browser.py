"""The Chainlit app in headless Chromium against a real LGOS server.

Each test drives the page as a person would (log in, pick a model in the profile menu, change
settings in the settings panel, type, click) and asserts only on what the page shows. Each saves
a screenshot under build/screenshots/chainlit/ (`just docs-images` refreshes the copies
the docs page embeds, in docs/img/chainlit/).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.support.chainlit_page import Chat
from tests.support.media import pdf, png
from tests.ui.chainlit.conftest import ChainlitApp

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900, func_only=True)]

WAITING = re.compile(r"Background run: Waiting for your review")
COMPLETED = re.compile(r"Background run: Completed")


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


@pytest.mark.parametrize(
    ("locale", "label"),
    [("de-DE", "Benutzername"), ("fr-FR", "Nom d'utilisateur"), ("ja", "ユーザー名")],
)
def test_the_login_asks_for_a_username_in_every_language(
    chainlit, new_page, locale: str, label: str
) -> None:
    page = new_page(locale)
    page.goto(chainlit.url)
    # The demo logs in with a user name (demo), whatever the browser's language.
    expect(page.get_by_text(label, exact=True)).to_be_visible()
    expect(page.locator("#email")).to_have_attribute("placeholder", "demo")


def test_simple_graph_streams_the_answer(chat: Chat, screenshot_dir: Path, timings) -> None:
    chat.pick_model("simple-graph")
    started = time.monotonic()
    chat.send("Hello from Chainlit")
    expect(
        chat.page.get_by_text("Here is a short answer: you said 'Hello from Chainlit'.")
    ).to_be_visible()
    timings.record("simple answer", started)
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


def test_welcome_opens_on_simple_graph_with_starter_prompts(
    chat: Chat, screenshot_dir: Path
) -> None:
    expect(chat.page.locator("#chat-profiles")).to_contain_text("simple-graph")
    starter = chat.page.get_by_role("button", name=re.compile("Say hello"))
    expect(starter).to_be_visible()
    chat.shot(screenshot_dir, "welcome")
    # Each graph has its own starters: the research graph offers research questions.
    chat.pick_model("deep-research")
    expect(
        chat.page.get_by_role("button", name=re.compile("How the sea kites work"))
    ).to_be_visible()
    expect(chat.page.get_by_role("button", name=re.compile("Say hello"))).to_have_count(0)


def test_integer_setting_outside_its_type_is_explained_and_not_used(
    chat: Chat, screenshot_dir: Path
) -> None:
    chat.pick_model("streaming-long-mock")
    chat.page.locator("#chat-settings-open-modal").click()
    dialog = chat.page.get_by_role("dialog")
    words = dialog.locator("#words")
    # An integer with a range too wide for a slider (1 to 5000) is a number box, not hidden.
    expect(words).to_be_visible()
    words.fill("2.5")
    dialog.locator("#confirm").click()
    expect(
        chat.page.get_by_text("Words must be a whole number; '2.5' is not.", exact=False)
    ).to_be_visible()
    chat.shot(screenshot_dir, "invalid-setting")
    # The previous value is kept: the graph runs with its default length.
    chat.page.locator("#chat-settings-open-modal").click()
    expect(chat.page.get_by_role("dialog").locator("#words")).to_have_value("200")


@pytest.mark.parametrize(
    ("model", "on"),
    [("background-mock", True), ("deep-research", True), ("background-interrupt", False)],
)
def test_run_in_background_is_on_for_the_graphs_meant_for_it(
    chat: Chat, model: str, on: bool
) -> None:
    chat.pick_model(model)
    chat.page.locator("#chat-settings-open-modal").click()
    switch = chat.page.get_by_role("dialog").locator("#lgos_ui_background")
    # Per graph, from its registration (lgos.background_by_default), not one global switch.
    expect(switch).to_have_attribute("aria-checked", "true" if on else "false")


@pytest.mark.parametrize(
    ("model", "own", "others"),
    [
        ("simple-graph", ["audience"], ["words", "delay_seconds"]),
        ("streaming-long-mock", ["words"], ["audience", "delay_seconds"]),
        ("background-mock", ["delay_seconds"], ["audience", "words"]),
    ],
)
def test_the_settings_panel_shows_only_the_graphs_own_settings(
    chat: Chat, model: str, own: list[str], others: list[str]
) -> None:
    chat.pick_model(model)
    chat.page.locator("#chat-settings-open-modal").click()
    dialog = chat.page.get_by_role("dialog")
    for key in own:
        expect(dialog.locator(f"#{key}")).to_have_count(1)
    # Another graph's setting would be sent to a graph that refuses it, or ignored in silence.
    for key in others:
        expect(dialog.locator(f"#{key}")).to_have_count(0)


def test_bounded_setting_shows_its_range(chat: Chat) -> None:
    chat.pick_model("background-mock")
    chat.page.locator("#chat-settings-open-modal").click()
    expect(chat.page.get_by_role("dialog").get_by_text("Allowed: 0 to 300.")).to_be_visible()


@pytest.mark.parametrize(
    ("choice", "outcome", "count"),
    [
        # The approved answer repeats the report the card showed: it is then on the page twice.
        ("Approve", "Background report for: Quarterly risks", 2),
        ("Reject", "The report on 'Quarterly risks' was rejected.", 1),
    ],
)
def test_background_review_card(
    chat: Chat, screenshot_dir: Path, choice: str, outcome: str, count: int, timings
) -> None:
    chat.pick_model("background-interrupt")
    chat.change_settings(background=True, slider="min")  # delay_seconds = 0
    started = time.monotonic()
    chat.send("Quarterly risks")
    # A paused run waits for the reviewer: it is never labelled "Completed".
    expect(chat.page.get_by_text(WAITING)).to_have_count(1)
    expect(chat.card()).to_be_visible()
    timings.record("review appears", started)
    expect(chat.page.get_by_text(COMPLETED)).to_have_count(0)
    card = chat.card()
    expect(card.locator("[data-role=question]")).to_have_text("Approve the prepared report?")
    expect(card.locator("[data-role=content]")).to_have_text(
        "Background report for: Quarterly risks"
    )
    expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    expect(card.get_by_role("button", name="Reject", exact=True)).to_be_visible()
    # This graph takes only its two choices: no free-text box.
    expect(card.get_by_role("textbox")).to_have_count(0)
    if choice == "Approve":
        chat.shot(screenshot_dir, "review-card")
    started = time.monotonic()
    chat.answer_review(choice)
    chat.expect_answered(choice.lower())
    # The continuation ran in the background too, on the paused run's own status line: one
    # line that ends "Completed", no second status bubble.
    expect(chat.page.get_by_text(COMPLETED)).to_have_count(1)
    expect(chat.page.get_by_text(re.compile(r"^Background run:"))).to_have_count(1)
    expect(chat.page.get_by_text(outcome, exact=True)).to_have_count(count)
    timings.record("approve → report" if choice == "Approve" else "reject → answer", started)
    # No extra bubble repeats the answer: the card holds it.
    expect(chat.page.get_by_text(f"Your answer: {choice.lower()}", exact=True)).to_have_count(0)
    chat.shot(screenshot_dir, f"background-review-{choice.lower()}")


@pytest.mark.parametrize(
    ("model", "background", "question", "result"),
    [
        ("interruptible-approval", False, "Approve publishing 'Chrome check'?", "Published"),
        ("background-interrupt", True, "Approve the prepared report?", "Background report"),
    ],
    ids=["foreground", "background"],
)
def test_a_review_is_one_card_with_no_bubbles_around_it_and_no_message_actions(
    chat: Chat, model: str, background: bool, question: str, result: str
) -> None:
    chat.pick_model(model)
    if background:
        chat.change_settings(background=True, slider="min")
    chat.send("Chrome check")
    card = chat.card()
    expect(card).to_have_attribute("data-state", "pending")
    # The card's own message holds the card and nothing else: no text bubble repeating the
    # question, no copy or thumbs buttons under it; and no second status line.
    holder = chat.page.locator("div.step").filter(has=card).last
    summary = re.compile(r"^(Waiting for your review|Review answered): ", re.I)
    status = chat.page.locator("div.step").filter(has_text=re.compile(r"^Background run:"))

    def one_card() -> None:
        expect(chat.page.locator("[id^='review-']")).to_have_count(1)
        expect(chat.page.get_by_text(question, exact=True)).to_have_count(1)
        expect(holder.locator("button")).to_have_count(card.locator("button").count())
        assert holder.inner_text().strip() == card.inner_text().strip()
        expect(chat.page.get_by_text(summary)).to_have_count(0)
        if background:
            # One status line, right above the card, with no buttons under it either.
            expect(chat.page.get_by_text(re.compile(r"^Background run:"))).to_have_count(1)
            expect(status.last.locator("button")).to_have_count(0)

    one_card()
    chat.answer_review("Approve")
    chat.expect_answered("approve")
    expect(chat.page.get_by_text(re.compile(result)).last).to_be_visible()
    one_card()


def test_review_card_takes_free_text(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("interruptible-approval")
    chat.send("Launch plan")
    card = chat.card()
    expect(card.locator("[data-role=question]")).to_have_text("Approve publishing 'Launch plan'?")
    card.get_by_role("textbox", name="Your feedback").fill("Please shorten it")
    card.get_by_role("button", name="Send feedback").click()
    chat.expect_answered("Please shorten it")
    expect(
        chat.page.get_by_text("Not published; your feedback was noted: Please shorten it")
    ).to_be_visible()
    chat.shot(screenshot_dir, "review-feedback")


def test_another_process_of_the_app_stopping_takes_nothing_from_this_one(
    chat: Chat, replica: ChainlitApp
) -> None:
    # Chainlit removes its files folder when a process exits; a second process of the same app
    # (started and stopped here) must not take this one's away: its review card is an element
    # with content, written there when it is sent and again when it is answered.
    replica.start()
    replica.stop()
    chat.pick_model("interruptible-approval")
    chat.send("Replica plan")
    card = chat.card()
    expect(card.locator("[data-role=question]")).to_have_text("Approve publishing 'Replica plan'?")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(chat.page.get_by_text("Published 'Replica plan'.")).to_be_visible()


def test_dismissing_a_review_leaves_it_pending(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("interruptible-approval")
    chat.send("Dismiss me")
    card = chat.card()
    expect(card).to_have_attribute("data-state", "pending")
    # What dismissing looks like on a page: Escape, a click elsewhere, leaving and coming back.
    chat.page.keyboard.press("Escape")
    chat.page.locator("#chat-input").click()
    chat.reload()
    card = chat.card()
    expect(card).to_have_attribute("data-state", "pending")
    expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    expect(chat.page.get_by_text("Published 'Dismiss me'.")).to_have_count(0)
    expect(chat.page.get_by_text(re.compile("Rejected: 'Dismiss me'"))).to_have_count(0)
    # Still answerable: the question was never answered by the dismissal.
    chat.answer_review("Approve")
    chat.expect_answered("approve")
    expect(chat.page.get_by_text("Published 'Dismiss me'.")).to_be_visible()


@pytest.mark.parametrize("background", [True, False], ids=["background", "foreground"])
def test_a_refused_answer_reads_refused_under_the_message_and_asks_again(
    chat: Chat, screenshot_dir: Path, background: bool
) -> None:
    chat.pick_model("background-interrupt")
    chat.change_settings(background=background, slider="min")
    chat.send("Typo check")
    card = chat.card()
    expect(card).to_have_attribute("data-state", "pending")
    # A typed answer goes to the waiting review; the graph takes only approve or reject.
    chat.page.fill("#chat-input", "maybe")
    chat.page.locator("#chat-submit").click()
    # The graph's own words, on the card and as the reply under the typed answer.
    expect(card.get_by_role("alert")).to_contain_text("'approve' or 'reject'")
    reply = chat.page.get_by_text(re.compile(r"Not accepted: .*'approve' or 'reject'"))
    expect(reply).to_be_visible()
    typed = chat.page.get_by_text("maybe", exact=True).last
    assert reply.bounding_box()["y"] > typed.bounding_box()["y"]  # type: ignore[index]
    # Still waiting: never "answered", never a failed run.
    expect(card).to_have_attribute("data-state", "pending")
    expect(chat.page.get_by_text(re.compile("Review answered"))).to_have_count(0)
    expect(chat.page.get_by_text(re.compile(r"Failed|The run failed"))).to_have_count(0)
    if background:
        expect(chat.page.get_by_text(WAITING)).to_have_count(1)
        chat.shot(screenshot_dir, "review-refused")
    chat.answer_review("Approve")
    chat.expect_answered("approve")
    expect(chat.page.get_by_text("Background report for: Typo check", exact=True)).to_have_count(2)


def test_text_typed_while_a_card_waits_answers_it_and_starts_no_run(chat: Chat) -> None:
    chat.pick_model("interruptible-approval")
    chat.send("Typed plan")
    card = chat.card()
    expect(card).to_have_attribute("data-state", "pending")
    # The composer belongs to the waiting review: `approve` typed and sent answers it.
    chat.page.fill("#chat-input", "approve")
    chat.page.locator("#chat-submit").click()
    chat.expect_answered("approve")
    expect(chat.page.get_by_text("Published 'Typed plan'.")).to_have_count(1)
    # Exactly one run: nobody is asked to publish 'approve', and no second card appears.
    expect(chat.page.get_by_text("Approve publishing 'approve'?")).to_have_count(0)
    expect(chat.page.locator("[id^='review-']")).to_have_count(1)


def test_a_review_being_answered_in_one_tab_takes_no_second_answer_in_another(
    chat: Chat,
) -> None:
    chat.pick_model("background-interrupt")
    # The graph sleeps this long before the review and again after the answer: the answer is
    # on its way for that long, which is when the second tab answers too.
    chat.change_settings(background=True, slider=12)
    chat.send("Two tabs")
    expect(chat.card()).to_have_attribute("data-state", "pending")
    # The same thread in a second tab of the same browser: its card waits there too.
    other = Chat(chat.page.context.new_page(), chat.url)
    other.goto(chat.page.url)
    expect(other.card()).to_have_attribute("data-state", "pending")
    chat.answer_review("Approve")
    expect(chat.card()).to_have_attribute("data-state", "sending")
    # Typed in the other tab while the first answer is on its way: neither a second answer
    # of the review nor a new run, and it says why.
    other.page.fill("#chat-input", "approve")
    other.page.locator("#chat-submit").click()
    expect(other.page.get_by_text(re.compile("This review is being answered"))).to_be_visible()
    chat.expect_answered("approve")
    expect(chat.page.get_by_text(COMPLETED)).to_have_count(1)
    expect(chat.page.get_by_text("Background report for: Two tabs", exact=True)).to_have_count(2)
    # The run went on once: no refusal or "busy" in either tab.
    for page in (chat.page, other.page):
        expect(page.get_by_text(re.compile(r"Not accepted|busy"))).to_have_count(0)


def test_always_approve_answers_the_next_question_of_its_kind(
    chat: Chat, screenshot_dir: Path
) -> None:
    chat.pick_model("interruptible-approval")
    chat.send("First plan")
    card = chat.card()
    # The graph declares the kind of question ("publishing") and the choice a reviewer may
    # make standing: the card offers it next to the graph's own choices.
    always = card.get_by_role("button", name="Always approve (publishing) in this chat")
    expect(always).to_be_visible()
    chat.shot(screenshot_dir, "review-always")
    always.click()
    expect(chat.page.get_by_text("Published 'First plan'.")).to_be_visible()
    # The next question of that kind in this chat is answered at once, and says how.
    chat.send("Second plan")
    expect(chat.page.get_by_text("Published 'Second plan'.")).to_be_visible()
    expect(chat.card()).to_have_attribute("data-state", "answered")
    expect(chat.card().locator("[data-role=decision]")).to_contain_text(
        "approve (always, in this chat)"
    )


def test_a_new_chat_lists_the_reviews_waiting_elsewhere(chat: Chat, screenshot_dir: Path) -> None:
    chat.pick_model("interruptible-approval")
    chat.send("Inbox item")
    expect(chat.card()).to_have_attribute("data-state", "pending")
    waiting_thread = chat.page.url
    # A new chat: the side panel lists the waiting review, and its link opens that chat at
    # its card, still pending.
    chat.goto(chat.url)
    inbox = chat.page.get_by_text(re.compile(r"Waiting for your review \(\d+\)"))
    expect(inbox).to_be_visible()
    link = chat.page.locator("#side-view-content").get_by_role("link", name="Inbox item")
    expect(link).to_be_visible()
    chat.shot(screenshot_dir, "review-inbox")
    with chat.page.context.expect_page() as opened:
        link.click()
    other = Chat(opened.value, chat.url)
    expect(other.page).to_have_url(waiting_thread)
    other.wait_for_session()
    expect(other.card()).to_have_attribute("data-state", "pending")
    expect(other.card().locator("[data-role=question]")).to_have_text(
        "Approve publishing 'Inbox item'?"
    )
    other.answer_review("Approve")
    other.expect_answered("approve")


def test_deep_research_plan_card_then_cited_report(
    chat: Chat, screenshot_dir: Path, timings
) -> None:
    chat.pick_model("deep-research")
    chat.send("Solar storage")  # foreground and streamed: the switch is off by default
    card = chat.card()
    expect(card.locator("[data-role=question]")).to_contain_text("Approve this research plan")
    expect(card.locator("[data-role=content]")).to_contain_text("Risks for 'Solar storage'")
    expect(card.get_by_role("textbox", name="Your feedback")).to_be_visible()
    started = time.monotonic()
    chat.answer_review("Approve")
    chat.expect_answered("approve")
    expect(chat.page.get_by_role("heading", name="Research report: Solar storage")).to_be_visible()
    timings.record("deep-research approve → report", started)
    # Chip [n] opens document n of the report's own numbered source list.
    sources = chat.page.get_by_role("heading", name="Sources").locator(
        "xpath=following-sibling::ol[1]/li"
    )
    expect(sources.first).to_be_visible()
    documents = [item.get_by_role("link").get_attribute("href") for item in sources.all()]
    chips = chat.page.get_by_role("link", name=re.compile(r"^\[\d+\]$"))
    expect(chips.first).to_be_visible()
    checked = set()
    for chip in chips.all():
        number = int((chip.text_content() or "").strip("[]"))
        # Document n of the list, at the passage the claim cites.
        document, _, passage = str(chip.get_attribute("href")).partition("#passage-")
        assert document == documents[number - 1], number
        assert passage.isdigit(), chip.get_attribute("href")
        checked.add(number)
    assert len(checked) >= 2, checked
    chat.shot(screenshot_dir, "deep-research")
    # A chip opens the page of its document, scrolled to the cited passage and marked.
    chip = chips.first
    claim = chip.locator("xpath=..").inner_text().split(f"[{chip.inner_text().strip('[]')}]")[0]
    with chat.page.context.expect_page() as opened:
        chip.click()
    page = opened.value
    page.wait_for_load_state("domcontentloaded")
    expect(page.locator(":target")).to_be_in_viewport()
    assert page.locator(":target").inner_text() in claim


def test_stop_cancels_a_background_run(chat: Chat, screenshot_dir: Path, timings) -> None:
    chat.pick_model("background-mock")
    chat.change_settings(background=True, slider="max")  # delay_seconds = 300
    chat.send("A very long report")
    expect(chat.page.get_by_text(re.compile(r"Background run: In progress"))).to_be_visible()
    # The step the graph reports is on the status line.
    expect(
        chat.page.get_by_text(re.compile(r"In progress \(\d+ s\) · Preparing the report"))
    ).to_be_visible()
    chat.shot(screenshot_dir, "background-timer")
    started = time.monotonic()
    chat.page.locator("#stop-button").click()
    expect(chat.page.get_by_text(re.compile(r"Background run: Cancelled"))).to_be_visible()
    timings.record("stop → cancelled", started)
    expect(chat.page.get_by_text(re.compile(r"Background report for"))).to_have_count(0)
    chat.shot(screenshot_dir, "stop-background")


def test_a_stopped_worker_is_named_with_the_command_that_starts_one(
    chainlit_without_worker, new_page, screenshot_dir: Path
) -> None:
    app, stack = chainlit_without_worker
    stack.start_worker()
    chat = Chat(new_page(), app.url)
    chat.login()
    chat.pick_model("background-mock")
    chat.change_settings(background=True, slider="min")
    chat.send("While the worker runs")
    expect(chat.page.get_by_text("Background report for: While the worker runs")).to_be_visible()
    # The worker stops (as after a crash or `just demo/down`): the next run waits in the queue.
    stack.stop_worker()
    chat.send("Nobody home")
    status = chat.page.get_by_text(re.compile(r"Background run: Queued \((\d+) s\)"))
    expect(status).to_be_visible()
    # The timer counts from the Response's created_at, so it moves while the run waits...
    expect(status).to_contain_text(re.compile(r"Queued \(([3-9]|\d\d+) s\)"))
    # ...and the line says why nothing happens, and what fixes it.
    expect(status).to_contain_text(
        re.compile(r"no worker has taken this run for \d+ s: start one with just demo/worker")
    )
    chat.shot(screenshot_dir, "queued-no-worker")
    chat.page.locator("#stop-button").click()
    expect(chat.page.get_by_text(re.compile(r"Background run: Cancelled"))).to_be_visible()


def test_an_unreachable_api_is_named_with_the_command_that_starts_it(
    chainlit_without_worker, new_page
) -> None:
    app, stack = chainlit_without_worker
    chat = Chat(new_page(), app.url)
    chat.login()
    chat.pick_model("simple-graph")
    # The API goes away (a crash, `just demo/down`): the next message cannot reach it.
    stack.server.stop()
    try:
        chat.page.fill("#chat-input", "Anyone there?")
        chat.page.locator("#chat-submit").click()
        # The piece by name, where it was looked for, and the command that starts it.
        expect(
            chat.page.get_by_text(
                re.compile(
                    r"Could not reach the LGOS API at http://127\.0\.0\.1:\d+/v1 .*"
                    r"Start it with just demo/api, then reload the page or send your message again"
                )
            )
        ).to_be_visible()
    finally:
        stack.server.start()


def test_background_result_arrives_after_a_reload(chat: Chat, screenshot_dir: Path) -> None:
    """Start background work, leave (reload), come back: the page picks the polling up."""
    chat.pick_model("background-mock")
    chat.change_settings(background=True, slider=12)  # delay_seconds = 12
    chat.send("Nightly numbers")
    expect(chat.page.get_by_text(re.compile(r"Background run: In progress"))).to_be_visible()
    chat.reload()
    # The old page is gone; only the resumed session can bring the result to this one.
    expect(chat.page.get_by_text("Nightly numbers", exact=True).first).to_be_visible()
    expect(chat.page.get_by_text("Background report for: Nightly numbers")).to_be_visible()
    expect(chat.page.get_by_text(COMPLETED)).to_have_count(1)
    chat.shot(screenshot_dir, "background-after-reload")


def test_review_survives_reload_and_restart(
    chat: Chat, chainlit, lgos_server, screenshot_dir: Path
) -> None:
    chat.pick_model("background-interrupt")
    chat.change_settings(background=True, slider="min")
    chat.send("Reload safety")
    expect(chat.card()).to_have_attribute("data-state", "pending")
    # A reload opens the thread again (the URL is /thread/<id>): the review is still pending.
    expect(chat.page).to_have_url(re.compile(r"/thread/"))
    chat.reload()
    expect(chat.card()).to_have_attribute("data-state", "pending")
    chat.shot(screenshot_dir, "review-after-reload")
    # Chainlit crashes and starts again (and LGOS restarts when it keeps reviews in PostgreSQL):
    # the review comes back from Chainlit's PostgreSQL data layer and still resumes the run.
    chainlit.crash_and_restart()
    if lgos_server is not None and lgos_server.durable:
        lgos_server.restart()
    chat.reload()
    chat.answer_review("Approve")
    chat.expect_answered("approve")
    expect(chat.page.get_by_text(COMPLETED)).to_have_count(1)
    report = chat.page.get_by_text("Background report for: Reload safety", exact=True)
    expect(report).to_have_count(2)  # in the card and as the answer


# Odd sizes, so the dimensions in the answer can only come from this file.
WIDTH, HEIGHT = 161, 97


def attach(chat: Chat, *files: tuple[str, str, bytes]) -> None:
    """Pick files for the paperclip (its file input, as the file picker fills it), and wait
    until each is uploaded and shows in the composer: images as pictures, others by name."""
    for name, mime, data in files:
        with chat.page.expect_response(lambda r: "/project/file?" in r.url) as uploaded:
            chat.page.locator("#upload-button-input").set_input_files(
                [{"name": name, "mimeType": mime, "buffer": data}]
            )
        assert uploaded.value.status == 200, f"{name}: {uploaded.value.text()}"
    shown = chat.page.locator("#attachments")
    for name, mime, _ in files:
        if mime.startswith("image/"):
            expect(shown.get_by_role("img", name=name)).to_be_visible()
        else:
            expect(shown.get_by_text(name, exact=True)).to_be_visible()


def test_an_attached_image_and_pdf_reach_the_graph_as_blocks(
    chat: Chat, screenshot_dir: Path
) -> None:
    image, document = png(WIDTH, HEIGHT), pdf()
    chat.pick_model("everything-agent")
    # A first message settles the chat's session: right after a profile change Chainlit may
    # reconnect once more under a new session id, and a file uploaded into the session being
    # replaced is not sent with the message (a person is slower than that; a test is not).
    chat.send("Hello")
    expect(chat.page.get_by_text("You asked: Hello")).to_be_visible()
    attach(chat, ("chart.png", "image/png", image), ("brief.pdf", "application/pdf", document))
    chat.send("What did I attach?")
    # The fake model measures what it received: the image's own header gives its size, and
    # the PDF arrives as a file block with its name and type (not as extracted text).
    answer = chat.page.get_by_text(re.compile(r"^I received ")).last
    expect(answer).to_contain_text(f"an image (image/png, {len(image)} bytes, {WIDTH}x{HEIGHT}")
    expect(answer).to_contain_text(f"a file 'brief.pdf' (application/pdf, {len(document)} bytes)")
    expect(answer).to_contain_text("You asked: What did I attach?")
    # The user's message shows what was sent with it.
    expect(chat.page.get_by_role("img", name="chart.png")).to_be_visible()
    expect(chat.page.get_by_role("button", name="Open PDF in a larger view")).to_be_visible()
    chat.shot(screenshot_dir, "attachments")


def test_the_paperclip_is_there_only_for_graphs_that_take_attachments(chat: Chat) -> None:
    # simple-graph takes text only: no paperclip, so nothing is attached only to be refused.
    expect(chat.page.locator("#chat-profiles")).to_contain_text("simple-graph")
    expect(chat.page.locator("#chat-input")).to_be_visible()
    expect(chat.page.locator("#upload-button")).to_have_count(0)
    chat.pick_model("everything-agent")
    expect(chat.page.locator("#upload-button")).to_be_visible()
    # It offers the types LGOS passes on to a graph that takes images and files.
    accept = chat.page.locator("#upload-button-input").get_attribute("accept") or ""
    assert {"image/png", "image/jpeg", "application/pdf"} <= set(accept.split(","))
