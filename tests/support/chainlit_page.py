"""The Chainlit demo app as a person uses it, in words of the page (Playwright): log in, pick a
graph, change its settings, send, answer a review card. Used by the Chainlit browser tests and by
the compose stack's browser pass."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect


class Chat:
    """What a user does in the Chainlit page, in words of the page."""

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.url = url

    def login(self, user: str = "demo", password: str = "demo") -> None:
        self.page.goto(self.url)
        # The login asks for a username (demo), not for Chainlit's default "Email address".
        expect(self.page.get_by_text("Username", exact=True)).to_be_visible()
        self.page.fill("#email", user)
        self.page.fill("#password", password)
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

    def card(self) -> Locator:
        """The latest review card."""
        return self.page.locator("[id^='review-']").last

    def answer_review(self, choice: str) -> None:
        card = self.card()
        expect(card).to_have_attribute("data-state", "pending")
        card.get_by_role("button", name=choice, exact=True).click()

    def expect_answered(self, answer: str) -> None:
        card = self.card()
        expect(card).to_have_attribute("data-state", "answered")
        # The decision and when it was made, on the card itself.
        expect(card.locator("[data-role=decision]")).to_contain_text(f"Your answer: {answer}")
        expect(card.locator("[data-role=decision]")).to_contain_text(re.compile(r"\d:\d\d"))
        expect(card.get_by_role("button")).to_have_count(0)

    def shot(self, directory: Path, flow: str) -> None:
        self.page.screenshot(path=str(directory / f"{flow}.png"), animations="disabled")
