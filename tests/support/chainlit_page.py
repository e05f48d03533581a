"""The Chainlit demo app as a person uses it, in words of the page (Playwright): log in, pick a
graph, change its settings, send, answer a review card. Used by the Chainlit browser tests and by
the compose stack's browser pass."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

# Chainlit (2.12) starts a new session when a chat profile is chosen, and at every page load
# (when it sets the default profile): it loads the page's config again for that profile, and
# connects its socket 200 ms (a debounce) after each render that changes what it connects with.
# When the config takes longer than that (a busy machine), it connects twice: a first socket
# before the config is in, then a second one under the same session id, which replaces it.
# Whatever is sent or shown through the first while it is being replaced is lost. The socket
# that stays is the first one opened after the last config load. The page does not expose its
# socket, so this script, run before the page's own, notes the config loads (fetch) and the
# sockets (WebSocket, which socket.io's transport opens once connected) as they happen.
TRACK_CONNECTIONS = """
(() => {
  if (window.__lgosConnections) return;
  const state = { seq: 0, configLoading: 0, configLoaded: 0, sockets: [] };
  window.__lgosConnections = state;
  const nativeFetch = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const url = typeof input === "string" ? input : String(input && input.url || input);
    if (!url.includes("/project/settings")) return nativeFetch(input, init);
    state.configLoading += 1;
    try {
      return await nativeFetch(input, init);
    } finally {
      state.configLoading -= 1;
      state.configLoaded = ++state.seq;
    }
  };
  window.WebSocket = new Proxy(window.WebSocket, {
    construct(target, args) {
      const socket = new target(...args);
      if (String(args[0]).includes("/ws/socket.io")) {
        const seen = { seq: ++state.seq, open: false };
        state.sockets.push(seen);
        socket.addEventListener("open", () => { seen.open = true; });
        socket.addEventListener("close", () => { seen.open = false; });
      }
      return socket;
    },
  });
})();
"""
# The newest socket is open, opened after the last config load (none is loading) and after
# `since` (the socket count before the action that starts a session).
SESSION_SOCKET = """
(since) => {
  const state = window.__lgosConnections;
  if (!state || state.configLoading > 0) return false;
  const last = state.sockets[state.sockets.length - 1];
  return !!last && last.open && last.seq > state.configLoaded && last.seq > since;
}
"""


class Chat:
    """What a user does in the Chainlit page, in words of the page."""

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.url = url
        # For every page of the context opened from now on (a link may open a new tab).
        page.context.add_init_script(TRACK_CONNECTIONS)

    def _socket_mark(self) -> int:
        return int(self.page.evaluate("() => window.__lgosConnections?.seq ?? 0"))

    def wait_for_session(self, since: int = 0, *, set_up: bool = True) -> None:
        """Wait until the page's session is the one that stays and, with `set_up`, until the
        app has set the chat up in it (its settings panel, sent by on_chat_start or
        on_chat_resume)."""
        self.page.wait_for_function(SESSION_SOCKET, arg=since)
        if set_up:
            expect(self.page.locator("#chat-settings-open-modal")).to_be_visible()

    def login(self, user: str = "demo", password: str = "demo") -> None:
        self.page.goto(self.url)
        # The login asks for a username (demo), not for Chainlit's default "Email address".
        expect(self.page.get_by_text("Username", exact=True)).to_be_visible()
        self.page.fill("#email", user)
        self.page.fill("#password", password)
        self.page.get_by_role("button", name=re.compile("continue|sign in|log ?in", re.I)).click()
        expect(self.page.locator("#chat-input")).to_be_visible()
        # Only the socket: when Chainlit connects twice, what the app sends at chat start may go
        # through the socket being replaced and never show (see the limits in
        # docs/demo/chainlit.md); a test that needs the chat set up picks a profile or reloads.
        self.wait_for_session(set_up=False)

    def reload(self) -> None:
        """Reload the page, as a person presses F5, and wait for its new session."""
        self.page.reload()
        expect(self.page.locator("#chat-input")).to_be_visible()
        self.wait_for_session()

    def goto(self, url: str) -> None:
        self.page.goto(url)
        expect(self.page.locator("#chat-input")).to_be_visible()
        self.wait_for_session()

    def pick_model(self, model: str) -> None:
        profiles = self.page.locator("#chat-profiles")
        if (profiles.text_content() or "").strip() == model:
            # Already chosen: Chainlit starts no new session for the same profile; the chat
            # start of the page's session is what the test waits for.
            self.wait_for_session()
            return
        since = self._socket_mark()
        profiles.click()
        self.page.get_by_role("option", name=model, exact=True).click()
        expect(profiles).to_contain_text(model)
        # A new session for the chosen profile: what the test does next must go to it.
        self.wait_for_session(since)

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
