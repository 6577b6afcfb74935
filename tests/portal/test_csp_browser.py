"""The Content-Security-Policy in a real browser (Debian's headless Chromium driven by Playwright): the pages and
their plotly charts work under it with no violation, and it does stop an injected inline script.

Skipped only when /usr/bin/chromium is absent. Playwright never downloads a browser here.
"""

from __future__ import annotations


import pytest

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.browser import needs_chromium
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = [
    needs_chromium,
    pytest.mark.django_db(transaction=True),
]

# Runs before any page script; CSP does not apply to what the browser's debugging protocol injects.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sample || ""));
});
"""


@pytest.fixture
def page(chromium_page):
    chromium_page.add_init_script(RECORD_VIOLATIONS)
    chromium_page.console_errors = chromium_page.errors
    chromium_page.on("console", lambda m: chromium_page.console_errors.append(m.text) if m.type == "error" else None)
    return chromium_page


# A GPU profile: CPU profiles time only as a pipeline check and get no speedup charts.
GPU, OTHER_GPU = "h200-nvlink-4", "h200-nvlink-2"


@pytest.fixture
def ranked(problems, user, django_capture_on_commit_callbacks):
    """Two passed submissions on a GPU profile (pre-made results, no evaluation), so the charts have data."""
    for speedup in (1.3, 2.1):
        with django_capture_on_commit_callbacks(execute=True):
            submission = submission_create(
                user=user, problem=ALL_REDUCE, profile=GPU, filename="s.py", source=CORRECT.read_text()
            )
        result_record(submission_id=submission.pk, document=passed_document(speedup))


def test_pages_and_plotly_charts_work_under_the_policy_and_inline_script_is_blocked(page, live_server, ranked):
    base = live_server.url
    response = page.goto(f"{base}/problems/{ALL_REDUCE}/?profile={GPU}")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector("#ranking-chart .main-svg")  # plotly drew the chart: no eval needed
    for url in ("/", "/runs/", "/runs/compare/", "/accounts/login/", "/api/docs/"):
        page.goto(base + url)
        page.wait_for_load_state("load")
    page.goto(f"{base}/problems/{ALL_REDUCE}/?profile={GPU}")
    page.wait_for_selector("#ranking-chart .main-svg")
    page.wait_for_selector('#speedup-chart[data-drawn="1"] .main-svg')  # the histogram too
    assert page.evaluate("window.__violations") == []
    assert not [e for e in page.console_errors if "Content Security Policy" in e], page.console_errors

    # The profile menu submits itself from static/js/site.js (an inline onchange would be blocked).
    page.select_option("select[data-autosubmit]", OTHER_GPU)
    page.wait_for_url(f"{base}/problems/{ALL_REDUCE}/?profile={OTHER_GPU}")

    # What an injection would try: an inline script and an inline event handler. Neither runs.
    ran = page.evaluate("""() => {
        const s = document.createElement("script");
        s.textContent = "window.__inline = 1";
        document.body.appendChild(s);
        const div = document.createElement("div");
        div.innerHTML = '<img src="data:," onerror="window.__handler = 1">';
        document.body.appendChild(div);
        return new Promise(r => setTimeout(() => r([window.__inline || 0, window.__handler || 0]), 300));
    }""")
    assert ran == [0, 0]
    assert any(v.startswith("script-src") for v in page.evaluate("window.__violations"))
