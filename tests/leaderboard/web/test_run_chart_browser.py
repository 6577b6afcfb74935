"""A run's per-category chart in a real browser (Debian's headless Chromium driven by Playwright): on a CPU profile,
where fast_p@k is not computed, it draws pass@k only; its legend named fast_1@k and fast_2@k with no bar. On a
profile that measures speed it draws all three. Skipped only when /usr/bin/chromium is absent."""

from __future__ import annotations

import pytest

from tests.browser import needs_chromium
from tests.leaderboard import run_fixtures as fx

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True)]
SERIES = "() => (document.getElementById('category-chart').data || []).map(t => t.name)"


@pytest.fixture
def page(chromium_page):
    yield chromium_page
    assert not chromium_page.errors, f"JavaScript errors on the pages: {chromium_page.errors}"


def _series(page, url: str) -> list[str]:
    page.goto(url)
    page.wait_for_selector("#category-chart[data-drawn]", state="attached")
    return page.evaluate(SERIES)


def test_a_cpu_runs_category_chart_draws_pass_at_k_only(page, live_server, user, problems):
    cpu = fx.make_run(user, manifest=dict(fx.MANIFEST, model="cpu-coder", hardware="cpu-gloo-2"))
    timed = fx.make_run(user)
    assert _series(page, f"{live_server.url}/runs/{cpu.pk}/") == ["pass@3"]
    assert _series(page, f"{live_server.url}/runs/{timed.pk}/") == ["pass@3", "fast₁@3", "fast₂@3"]
