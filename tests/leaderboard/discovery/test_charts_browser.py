"""The charts in a real browser (Debian's headless Chromium driven by Playwright, plotly from /static/, no CDN):
a problem's best speedup over time; a run's per-problem speedups, pass@k against k, fast_p against p and roofline
fraction per category; score against search cost with the Pareto front across runs; the home page's search."""

from __future__ import annotations

import pytest

from leaderboard.models import Problem
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.browser import needs_chromium
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True)]
GPU = "h200-nvlink-2"


@pytest.fixture
def page(chromium_page):
    requests = []
    chromium_page.on("request", lambda r: requests.append(r.url))
    chromium_page.requests = requests
    yield chromium_page
    assert not chromium_page.errors, f"JavaScript errors on the pages: {chromium_page.errors}"


def _drawn(page, selector: str) -> None:
    page.wait_for_selector(f"{selector}[data-drawn='1'] .main-svg", timeout=30_000)


def test_charts_render_from_local_plotly(page, live_server, problems, django_user_model, redis_conn):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    version = Problem.objects.get(pk=ALL_REDUCE).version
    for i, (who, speedup) in enumerate([(ada, 1.4), (bob, 2.2), (ada, 1.9)]):
        s = submission_create(
            user=who, problem=ALL_REDUCE, profile=GPU, filename="s.py", source=CORRECT.read_text() + f"\n_V = {i}\n"
        )
        result_record(submission_id=s.pk, document=passed_document(speedup, version=version))
    # /runs/ ranks (and charts) only runs that cover their whole suite: leave the fixture's four problems the suite's
    # only active ones, so both runs are ranked and the Pareto charts have two points each.
    problems.exclude(id__in={p for p, _ in fx.OUTCOMES}).update(is_active=False)
    run = fx.make_run(ada)
    other = fx.make_run(bob, manifest=dict(fx.MANIFEST, model="other-coder", tokens=500_000, wall_time_s=3600))
    assert (run.score.status, other.score.status) == ("ranked", "ranked")
    base = live_server.url

    page.goto(f"{base}/problems/{ALL_REDUCE}/?profile={GPU}")
    _drawn(page, "#history-chart")
    assert page.locator("#best-solutions li").count() >= 2  # the top of the ranking, at most three

    page.goto(f"{base}/runs/{run.pk}/")
    for chart in ("#run-speedup-chart", "#run-passk-chart", "#run-fastp-chart", "#run-roofline-chart"):
        _drawn(page, chart)

    page.goto(f"{base}/runs/")
    assert page.locator("#run-ranking tbody tr").count() == 2
    for chart in ("#pareto-tokens-chart", "#pareto-time-chart"):
        _drawn(page, chart)
        # every run a point; the front: the cheaper run (same pass@k for less), drawn with its label
        traces = page.eval_on_selector(chart, "el => el.data.map(t => [t.name, t.x.length, t.text])")
        assert [(name, n) for name, n, _ in traces] == [("runs", 2), ("Pareto front", 1)], traces
        assert traces[1][2] == [f"#{run.pk} handworked-coder (zero-shot, k=3)"], traces

    page.goto(f"{base}/?q=all_reduce")
    assert page.locator("#match-count").count() == 1
    page.fill("#id_q", "")
    page.select_option("#id_category", "tensor-parallel")
    with page.expect_navigation():
        page.locator("#problem-search").evaluate("form => form.submit()")
    assert "category=tensor-parallel" in page.url
    assert page.locator("#tensor-parallel").count() == 1 and page.locator("#collectives").count() == 0

    assert all(u.startswith(base) for u in page.requests), [u for u in page.requests if not u.startswith(base)]
