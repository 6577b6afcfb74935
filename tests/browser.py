"""A headless Chromium tab for tests against pytest-django's live server: Debian's package driven by Playwright,
never a downloaded browser. Test modules wrap ``chromium_page`` in a fixture of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from django.conf import settings
from django.core.management import call_command

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium tries to reach Google's hosts at every start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)")


@pytest.fixture
def chromium_page(monkeypatch) -> Iterator:
    """A tab with a 30 s default timeout; ``tab.errors`` collects uncaught JavaScript errors."""
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test itself makes are still
    # synchronous, one at a time, so Django's guard against ORM use inside an event loop does not apply.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not (Path(settings.BASE_DIR) / "static" / "vendor" / "plotly.min.js").is_file():
        call_command("vendor_static")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        tab = browser.new_context().new_page()
        tab.set_default_timeout(30_000)
        tab.errors = []
        tab.on("pageerror", lambda exc: tab.errors.append(str(exc)))
        yield tab
        browser.close()
