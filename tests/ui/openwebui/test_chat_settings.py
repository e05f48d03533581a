"""Each graph's settings in Open WebUI, in a real browser: the chat box's Chat Variables button.

sync.py declares a graph's settings as chat variables of its own workspace model, so the dialog
of a chat shows the settings of that chat's graph only; numbers are number inputs with the
graph's bounds, which the browser enforces when the dialog is saved; and "Run in background"
starts at each graph's own choice, per chat.
"""

from __future__ import annotations

import re
import time

import pytest
from owui_support import last_message, screenshot
from playwright.sync_api import Page, expect

from tests.support.openwebui_page import (
    BACKGROUND,
    DELAY,
    change_settings,
    expect_finished,
    last_answer,
    open_chat,
    review_card,
    send,
    setting,
    settings_dialog,
    status_line,
)

pytestmark = pytest.mark.timeout(600, func_only=True)


def ran_in_background(url: str, token: str, page: Page) -> bool:
    """Whether the last answer came from a background Response: the Pipe keeps its id in the
    status history's data (a foreground stream has none)."""
    deadline = time.monotonic() + 30  # the history is saved a moment after the page shows it
    while time.monotonic() < deadline:
        history = list(last_message(url, token, page).get("statusHistory") or [])
        if history and history[-1].get("done"):
            return any(status.get("response_id") for status in history)
        time.sleep(0.2)
    raise AssertionError(f"the run never finished: {last_message(url, token, page)}")


def expect_setting(page: Page, label: str, value: str) -> None:
    """The chat's settings dialog shows `value` for one setting; closed without saving."""
    dialog = settings_dialog(page)
    expect(setting(dialog, label)).to_have_value(value)
    dialog.get_by_role("button", name="Cancel").click()


def test_each_model_shows_only_its_own_settings(page: Page, openwebui_url: str) -> None:
    open_chat(page, openwebui_url, "lgos.simple-graph")
    dialog = settings_dialog(page)
    expect(dialog).to_contain_text("Audience")
    expect(dialog).to_contain_text("Enthusiastic")
    # Not background-mock's nor deep-research's, and no switch for a graph that cannot run
    # in the background.
    expect(dialog).not_to_contain_text(DELAY)
    expect(dialog).not_to_contain_text("Depth")
    expect(dialog).not_to_contain_text(BACKGROUND)
    dialog.get_by_role("button", name="Cancel").click()

    open_chat(page, openwebui_url, "lgos.background-mock")
    dialog = settings_dialog(page)
    expect(dialog).to_contain_text(BACKGROUND)
    expect(dialog).to_contain_text(DELAY)
    expect(dialog).not_to_contain_text("Audience")
    expect(dialog).not_to_contain_text("Depth")
    dialog.get_by_role("button", name="Cancel").click()

    # A graph without settings has no settings button at all.
    open_chat(page, openwebui_url, "lgos.multi-node-streaming")
    expect(page.get_by_role("button", name="Chat Variables")).to_have_count(0)


def test_a_number_setting_is_a_number_input_with_the_graphs_bounds(
    page: Page, openwebui_url: str
) -> None:
    open_chat(page, openwebui_url, "lgos.background-mock")
    delay = setting(settings_dialog(page), DELAY)
    expect(delay).to_have_attribute("type", "number")
    expect(delay).to_have_attribute("min", "0")
    expect(delay).to_have_attribute("max", "300")
    expect(delay).to_have_attribute("step", "1")
    # It starts at the graph's default, and its label says the range.
    expect(delay).to_have_value("5")
    expect(page.get_by_role("dialog")).to_contain_text("Delay Seconds (0 to 300)")


def test_a_refused_value_is_named_with_its_bounds_when_saved(
    page: Page, openwebui_url: str
) -> None:
    open_chat(page, openwebui_url, "lgos.background-mock")
    dialog = settings_dialog(page)
    delay = setting(dialog, DELAY)
    screenshot(page, "settings-background-mock")
    for value, bound in (("999", "300"), ("-1", "0"), ("2.5", "")):
        delay.fill(value)
        dialog.get_by_role("button", name="Save").click()
        # The browser refuses to save and says why, at the field (what its bubble shows).
        expect(dialog).to_be_visible()
        message = str(delay.evaluate("e => e.validationMessage"))
        assert message, value
        assert bound in message, (value, message)
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()

    # Nothing refused was kept: the run takes the graph's own delay, and LGOS refuses nothing.
    send(page, "After a bad value")
    answer = last_answer(page)
    expect(answer).to_contain_text("Background report for: After a bad value")
    expect(answer).not_to_contain_text("refused the request")
    expect(answer).not_to_contain_text("300")
    expect_finished(page)


def test_background_is_on_by_default_only_for_graphs_meant_for_it(
    page: Page, openwebui_url: str, admin_token: str
) -> None:
    # background-mock is registered as meant for long work: its switch starts on.
    open_chat(page, openwebui_url, "lgos.background-mock")
    expect_setting(page, BACKGROUND, "on")
    send(page, "Long work")
    expect(last_answer(page)).to_contain_text("Background report for: Long work")
    expect_finished(page)
    assert ran_in_background(openwebui_url, admin_token, page)

    # background-interrupt can run in the background but is not meant to: it starts off.
    open_chat(page, openwebui_url, "lgos.background-interrupt")
    expect_setting(page, BACKGROUND, "off")
    send(page, "Short work")
    expect(status_line(page)).to_have_text("Waiting for your review")
    review_card(page).get_by_role("button", name=re.compile("^Approve")).click()
    expect(last_answer(page)).to_contain_text("Background report for: Short work")
    expect_finished(page)
    assert not ran_in_background(openwebui_url, admin_token, page)


def test_background_turned_off_in_one_chat_stays_in_that_chat(
    page: Page, openwebui_url: str, admin_token: str
) -> None:
    open_chat(page, openwebui_url, "lgos.background-mock")
    change_settings(page, {BACKGROUND: "off", DELAY: "0"})
    send(page, "In the foreground")
    expect(last_answer(page)).to_contain_text("Background report for: In the foreground")
    expect_finished(page)
    assert not ran_in_background(openwebui_url, admin_token, page)
    # The chat keeps its settings: the next message of the chat runs the same way.
    send(page, "Again in the foreground")
    expect(last_answer(page)).to_contain_text("Background report for: Again in the foreground")
    expect_finished(page)
    assert not ran_in_background(openwebui_url, admin_token, page)

    # Another chat with the same graph starts from the graph's own choice again.
    open_chat(page, openwebui_url, "lgos.background-mock")
    send(page, "A new chat")
    expect(last_answer(page)).to_contain_text("Background report for: A new chat")
    expect_finished(page)
    assert ran_in_background(openwebui_url, admin_token, page)
