"""Open WebUI with the LGOS Pipe as a person uses it, in words of the page (Playwright): log in,
open a chat with a graph, type, read the answer and its status line, find the review card; and
Open WebUI's REST API, for what the tests set up and read back. Used by the Open WebUI browser
tests, the two-users tests and the compose stack's browser pass."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from typing import Any

from playwright.sync_api import Page, expect

# How long a chat may keep failing to load while the machine's network changes.
OPEN_DEADLINE_SECONDS = 180
# The labels of two demo settings in the chat's settings dialog (demo/openwebui/sync.py).
BACKGROUND = "Run in background"
DELAY = "Delay Seconds"


def http_json(method: str, url: str, body: Any = None, token: str | None = None) -> Any:
    """One call of Open WebUI's REST API (with a user's session token), its JSON answer."""
    request = urllib.request.Request(
        url, data=None if body is None else json.dumps(body).encode(), method=method
    )
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read().decode() or "null")


def log_in(page: Page, url: str, email: str, password: str) -> None:
    """Sign in on Open WebUI's login page (WEBUI_AUTH=true), as a person does."""
    page.goto(f"{url}/auth", wait_until="domcontentloaded")
    page.locator("input[type=email]").fill(email)
    page.locator("input[type=password]").fill(password)
    page.get_by_role("button", name=re.compile("sign in", re.I)).click()
    expect(page.locator("#chat-input")).to_be_visible()


def open_chat(page: Page, url: str, model: str) -> None:
    load(page, f"{url}/?models={model}")


def load(page: Page, url: str) -> None:
    """Open a page of Open WebUI and wait until its chat box shows."""
    page.goto(url, wait_until="domcontentloaded")
    # Chromium aborts loads when the machine's network changes (containers starting on a shared
    # host: net::ERR_NETWORK_CHANGED, often several times in a row), and Open WebUI then shows
    # its error page: load it again until the chat box shows, within a deadline. Its own page
    # reads "500: Internal Error"; when the load fails before its layout runs, SvelteKit's
    # fallback shows "500" and a heading "Internal Error".
    chat_input = page.locator("#chat-input")
    failed = (
        page.get_by_text("500: Internal Error")
        .or_(page.get_by_role("heading", name="Internal Error"))
        .first
    )
    deadline = time.monotonic() + OPEN_DEADLINE_SECONDS
    while True:
        expect(chat_input.or_(failed).first).to_be_visible()
        if not failed.is_visible() or time.monotonic() > deadline:
            break
        page.reload(wait_until="domcontentloaded")
    expect(chat_input).to_be_visible()
    # The chat box shows before the socket is up; what a test does next needs the socket.
    wait_for_socket(page)


# Open WebUI's layout sets window.WEBUI_VERSION in the handler of its socket's `connect` event,
# and nowhere else: once set, the socket of this page is connected, the server has filed it
# under the signed-in user, and the page has asked to join its user's room (user-join is
# emitted in the same handler). Until then a message is sent with no session id: the Pipe's
# review card cannot be shown (the server answers "Client session disconnected"), and "Answer
# now" asks a socket that is not there.
SOCKET_CONNECTED = "() => window.WEBUI_VERSION !== undefined"


def wait_for_socket(page: Page) -> None:
    """Wait until the page's socket.io connection is up, as Open WebUI itself reports it."""
    page.wait_for_function(SOCKET_CONNECTED)


def send(page: Page, text: str) -> None:
    wait_for_socket(page)
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


def review_card(page: Page) -> Any:
    """Open WebUI's question card, under the message that asks (not a modal dialog)."""
    return page.locator("section").filter(has_text="Submit answers").last


def status_line(page: Page) -> Any:
    """The status line under the model name of the (last) answer."""
    return page.get_by_role("button", name="Toggle status history").last


def settings_dialog(page: Page) -> Any:
    """The selected graph's settings: the dialog of the chat box's Chat Variables button."""
    page.get_by_role("button", name="Chat Variables").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Chat Variables")
    return dialog


def setting(dialog: Any, label: str) -> Any:
    """The field of one setting in the settings dialog, found by the start of its label."""
    row = dialog.locator("div.py-0\\.5", has_text=label)
    return row.locator("input, select, textarea").first


def change_settings(page: Page, values: dict[str, str]) -> None:
    """Set some of the chat's settings in the dialog, as a user does, and save them."""
    dialog = settings_dialog(page)
    for label, value in values.items():
        field = setting(dialog, label)
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
