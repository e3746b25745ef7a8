"""Browser tests: pip's playwright driving Debian's chromium (/usr/bin/chromium; no browser download)
against pytest-django's live server. Each test saves a screenshot under tests/e2e/artifacts/ and fails if a
page ever opened a JavaScript dialog (a passage that ran as script)."""

from __future__ import annotations

import http.server
import os
import threading
from pathlib import Path
from urllib.parse import parse_qs

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Playwright's sync API runs an event loop in this thread; the tests still read the database synchronously.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: .ci/run installs Debian's chromium")
        pytest.skip("/usr/bin/chromium is not installed (apt-get install chromium); CI installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request):
    """A fresh browser context (no cookies) at a laptop's size; dialogs are recorded and fail the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    # Generous: a loaded 2-core CI machine runs a live server, chromium and the database at once.
    context.set_default_timeout(30_000)
    page = context.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog):
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.dialogs = dialogs
    yield page
    context.close()
    assert dialogs == [], f"a page opened a dialog: {dialogs}"


def screenshot(page, name: str, *, full_page: bool = False) -> Path:
    """Save the viewport once the page has loaded. Chromium refuses a capture ("Unable to capture screenshot")
    while a navigation is replacing the page, so the capture waits for the load and is tried once more after a
    refusal; a test that means a particular page waits for that page's element first."""
    from playwright.sync_api import Error as PlaywrightError

    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.wait_for_load_state("load")
    try:
        page.screenshot(path=str(path), full_page=full_page)
    except PlaywrightError as error:
        if "Unable to capture screenshot" not in str(error):
            raise
        page.wait_for_load_state("load")
        page.wait_for_timeout(200)
        page.screenshot(path=str(path), full_page=full_page)
    return path


class FakeMTurk:
    """A local stand-in for MTurk's worker site: ``/`` frames the HIT page like worker.mturk.com does, and
    ``/mturk/externalSubmit`` records what the HIT page's final form posts."""

    def __init__(self) -> None:
        self.frame_url = ""
        self.submissions: list[dict[str, list[str]]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = (
                    "<!doctype html><html><head><title>MTurk stand-in</title></head><body style='margin:0'>"
                    "<p style='font:16px sans-serif;margin:4px'>Worker site stand-in</p>"
                    f"<iframe id='hit' src='{fake.frame_url}' style='width:100%;height:760px;border:0'></iframe>"
                    "</body></html>"
                ).encode()
                self._send(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                fake.submissions.append(parse_qs(self.rfile.read(length).decode()))
                self._send(b"<!doctype html><p id='received'>HIT submitted to the stand-in</p>")

            def _send(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_mturk(settings):
    fake = FakeMTurk()
    settings.TOPPREF_FRAME_ANCESTORS = [fake.origin]
    settings.TOPPREF_MTURK_SUBMIT_HOSTS = [fake.origin]
    yield fake
    fake.close()
