"""The newcomer's flows in a real browser (Debian's headless Chromium driven by Playwright) against a live server,
each checking one defect of issue 16 gone, and the main pages at 390, 1366 and 1920 px with no sideways scroll.

Screenshots go to $ARENA_SCREENSHOTS (default: a temporary directory of the test run), never into the repository.
Skipped only when /usr/bin/chromium is absent. Playwright never downloads a browser here.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from rq import Queue
from rq.serializers import JSONSerializer

from evaluator.host.worker import ArenaWorker
from leaderboard.models import Submission
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.browser import needs_chromium
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-test-password-1"  # the `user` fixture's
WIDTHS = (390, 1366, 1920)
PROBLEM_PAGE = f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2"


@pytest.fixture
def shots(tmp_path_factory) -> Path:
    where = os.environ.get("ARENA_SCREENSHOTS")
    folder = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(chromium_page):
    chromium_page.not_found = []
    chromium_page.on("response", lambda r: chromium_page.not_found.append(r.url) if r.status == 404 else None)
    yield chromium_page
    assert not chromium_page.errors, f"JavaScript errors on the pages: {chromium_page.errors}"


def _sign_in(page, base: str, username: str, next_url: str = "/") -> None:
    page.goto(f"{base}/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}{next_url}")


def _submission(
    user, *, speedup: float | None = None, document: dict | None = None, capture=None, profile: str = "cpu-gloo-2"
) -> Submission:
    with capture(execute=True):
        submission = submission_create(
            user=user, problem=ALL_REDUCE, profile=profile, filename="s.py", source=CORRECT.read_text()
        )
    if document is not None or speedup is not None:
        result_record(submission_id=submission.pk, document=document or passed_document(speedup))
    return submission


def _no_sideways_scroll(page) -> tuple[int, int]:
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def _worker(redis_conn, queue: str, *, busy: bool) -> ArenaWorker:
    """A live worker as deployments run it (the arena's class: JSON, allow-listed jobs, signed replies), registered
    with a fresh heartbeat; it runs no job here."""
    worker = ArenaWorker([queue], connection=redis_conn)
    worker.register_birth()
    worker.heartbeat()
    worker.set_state("busy" if busy else "idle")
    return worker


def test_main_pages_fit_at_390_1366_and_1920_px_with_screenshots(
    page, live_server, user, problems, shots, django_capture_on_commit_callbacks
):
    """Defect 5: no page scrolls sideways at 390 px; at 1366 px the signed-in navbar is one line; the /runs/ table
    and the user page's table fit their boxes at 1366 and 1920 px. A screenshot of every page at every width."""
    for speedup in (1.3, 2.1, 0.9):
        _submission(user, speedup=speedup, capture=django_capture_on_commit_callbacks)
    run = fx.make_run(user)
    fx.make_run(
        user, manifest=dict(fx.MANIFEST, protocol="agentic", turn_budget=40, model="a-rather-long-model-name-70b")
    )
    base = live_server.url
    _sign_in(page, base, user.username)
    pages = {
        "home": "/",
        "problem": PROBLEM_PAGE,
        "runs": "/runs/",
        "run": f"/runs/{run.pk}/",
        "submit": "/submit/",
        "contribute": "/contribute/",
        "user": f"/users/{user.username}/",
    }
    overflowing = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for name, url in pages.items():
            page.goto(base + url)
            page.wait_for_load_state("load")
            page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
            scroll, inner = _no_sideways_scroll(page)
            if scroll > inner:
                culprits = page.evaluate("""() => [...document.querySelectorAll('main *, header *')]
                    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                                 && !(e.parentElement && e.parentElement.getBoundingClientRect().right
                                      > window.innerWidth + 1))
                    .slice(0, 5).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className)""")
                overflowing.append(f"{url} at {width} px: {scroll} > {inner} ({culprits})")
            if width >= 1366:
                # the navbar on one line: every item of it at the same height
                tops = page.evaluate(
                    "[...document.querySelectorAll('.site-header nav > *')]"
                    ".filter(e => e.offsetParent).map(e => Math.round(e.getBoundingClientRect().top"
                    " + e.getBoundingClientRect().height / 2))"
                )
                if max(tops) - min(tops) > 4:
                    overflowing.append(f"the navbar wraps at {width} px on {url}: {tops}")
            if name in ("runs", "user") and width >= 1366:
                fits = page.evaluate(
                    "[...document.querySelectorAll('.table-wrap')].map(w => [w.scrollWidth, w.clientWidth])"
                )
                if not fits or not all(s <= c + 1 for s, c in fits):
                    overflowing.append(f"{url} at {width} px: a table is wider than its box {fits}")
    assert not overflowing, overflowing
    assert len(list(shots.glob("*.png"))) >= len(pages) * len(WIDTHS)


def test_code_line_numbers_are_level_with_the_code(page, live_server, problems):
    """Defect 4: in every code block, line n of the numbers sits at the height of line n of the code."""
    page.goto(live_server.url + PROBLEM_PAGE)
    blocks = page.evaluate("""() => [...document.querySelectorAll('table.highlighttable')].map(t => {
        const nums = t.querySelector('td.linenos pre'), code = t.querySelector('td.code pre');
        const style = e => { const s = getComputedStyle(e); return [s.fontSize, s.lineHeight, s.fontFamily]; };
        const lineTop = (pre, n) => {  // the top of line n's text, through a range on the n-th line
            const text = pre.textContent; let start = 0;
            for (let i = 1; i < n; i++) start = text.indexOf('\\n', start) + 1;
            const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT); let node, seen = 0;
            while ((node = walker.nextNode())) {
                if (seen + node.length > start && node.length) {
                    const r = document.createRange(); const at = Math.max(0, start - seen);
                    r.setStart(node, at); r.setEnd(node, Math.min(node.length, at + 1));
                    return r.getBoundingClientRect().top;
                }
                seen += node.length;
            }
            return null;
        };
        const lines = nums.textContent.trim().split('\\n').length;
        return {same: JSON.stringify(style(nums)) === JSON.stringify(style(code)), styles: [style(nums), style(code)],
                first: [lineTop(nums, 1), lineTop(code, 1)], last: [lineTop(nums, lines), lineTop(code, lines)]};
    })""")
    assert blocks, "no code block with line numbers on the problem page"
    for block in blocks:
        assert block["same"], block["styles"]
        assert abs(block["first"][0] - block["first"][1]) <= 1, block
        assert abs(block["last"][0] - block["last"][1]) <= 1, block


def test_queued_page_says_the_worker_is_busy_and_when_it_may_start(
    page, live_server, user, problems, redis_conn, django_capture_on_commit_callbacks
):
    """Defect 2: a queued submission's page says how many workers serve its queue, whether they are busy, and an
    estimate; a timeout's message gives the limit and says the ranks were stuck."""
    done = _submission(user, capture=django_capture_on_commit_callbacks)
    start = timezone.now() - timedelta(minutes=10)
    Submission.objects.filter(pk=done.pk).update(
        state=Submission.State.FINISHED, started_at=start, finished_at=start + timedelta(seconds=90)
    )
    # it ran: it waits no more
    Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer).remove(done.job_id)
    _worker(redis_conn, "cpu-gloo-2", busy=True)
    queued = _submission(user, capture=django_capture_on_commit_callbacks)
    base = live_server.url
    _sign_in(page, base, user.username, f"/submissions/{queued.pk}/")
    from playwright.sync_api import expect

    expect(page.locator("#queue-workers")).to_contain_text("1 worker serves this queue; 1 is busy")
    expect(page.locator("#queue-estimate")).to_contain_text("Estimated start: in about 2 min")

    stuck = _submission(
        user,
        capture=django_capture_on_commit_callbacks,
        document=failed_document(
            "timeout",
            "the setup phase passed its limit of 30 s: rank(s) 1 did not finish it (stuck in a collective, "
            "a send/recv whose peer never came, or a loop)",
        ),
    )
    page.goto(f"{base}/submissions/{stuck.pk}/")
    expect(page.locator("#message")).to_contain_text("passed its limit of 30 s")
    expect(page.locator("#message")).to_contain_text("send/recv")


def test_proposal_form_keeps_everything_after_an_error(page, live_server, user, tmp_path):
    """Defect 3: after one validation error the uploaded files and pasted text are all still there."""
    from playwright.sync_api import expect

    from problems.registry import PROBLEMS_ROOT

    example = PROBLEMS_ROOT / "collectives" / "all_reduce"
    base = live_server.url
    _sign_in(page, base, user.username, "/contribute/")
    page.fill("#id_name", "Bad Name")
    page.set_input_files("#id_problem_toml_file", str(example / "problem.toml"))
    page.fill("#id_reference_py", (example / "reference.py").read_text())
    page.set_input_files("#id_readme_md_file", str(example / "README.md"))
    page.set_input_files("#id_correct", str(example / "solutions" / "correct" / "nccl_inplace_copy.py"))
    page.click("#proposal-form button[type=submit]")
    expect(page.locator("#kept")).to_contain_text("your upload problem.toml is kept")
    expect(page.locator("#kept")).to_contain_text("solutions/correct/nccl_inplace_copy.py")
    assert page.input_value("#id_problem_toml") == (example / "problem.toml").read_text()
    assert page.input_value("#id_reference_py") == (example / "reference.py").read_text()
    assert page.input_value("#id_readme_md") == (example / "README.md").read_text()
    page.fill("#id_name", "sum_over_ranks_kept")
    page.click("#proposal-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/contribute/proposals/\d+/$"))
    expect(page.locator("body")).to_contain_text("nccl_inplace_copy.py")


def test_api_docs_are_plain_and_the_schema_opens_in_the_browser(page, live_server):
    """Defect 6."""
    base = live_server.url
    page.goto(f"{base}/api/docs/")
    assert "``" not in page.inner_text("main")
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    with page.expect_navigation():
        page.click("#schema-json")
    assert page.url == f"{base}/api/schema.json" and not downloads
    assert '"openapi"' in page.inner_text("body")


def test_403_has_the_site_around_it_and_moderators_get_their_links(page, live_server, user, django_user_model):
    """Defect 7."""
    from django.contrib.auth.models import Group
    from playwright.sync_api import expect

    base = live_server.url
    _sign_in(page, base, user.username)
    response = page.goto(f"{base}/contribute/review/")
    assert response.status == 403
    expect(page.locator(".site-header")).to_be_visible()
    expect(page.locator("#forbidden")).to_contain_text("The review queue is for moderators.")
    expect(page.locator("#nav-review")).to_have_count(0)

    moderator = django_user_model.objects.create_user(username="mo", password=PASSWORD, is_staff=True)
    moderator.groups.add(Group.objects.get_or_create(name="moderators")[0])
    page.context.clear_cookies()
    _sign_in(page, base, "mo")
    page.click("#nav-review")
    page.wait_for_url(f"{base}/contribute/review/")
    expect(page.locator("#nav-admin")).to_have_attribute("href", "/admin/")
    page.set_viewport_size({"width": 1366, "height": 900})  # a moderator's longer navbar still fits one line
    tops = page.evaluate(
        "[...document.querySelectorAll('.site-header nav > *')].filter(e => e.offsetParent)"
        ".map(e => Math.round(e.getBoundingClientRect().top + e.getBoundingClientRect().height / 2))"
    )
    assert max(tops) - min(tops) <= 4, tops
    page.click("#account-menu summary")  # the account's links open from the user name
    expect(page.locator("#account-menu button:has-text('Log out mo')")).to_be_visible()


def test_point_to_point_only_solution_is_explained_in_neutral_colour(
    page, live_server, user, problems, django_capture_on_commit_callbacks
):
    """Defect 8."""
    from playwright.sync_api import expect

    document = passed_document(1.2)
    document["flags"] = {
        "uses_nccl": True,
        "nccl_calls": [],
        "point_to_point_calls": ["irecv", "isend"],
        "uses_collectives_api": False,
        "suspicious_speedup": False,
        "communication_calls": {"torch.distributed.isend": 4, "torch.distributed.irecv": 4},
        "communication_source": "counted at run time inside the sandbox",
    }
    submission = _submission(user, document=document, capture=django_capture_on_commit_callbacks)
    _sign_in(page, live_server.url, user.username, f"/submissions/{submission.pk}/")
    expect(page.locator("#communication")).to_contain_text(
        "point-to-point calls only (send/recv), no collective, through gloo"
    )
    expect(page.locator("body")).not_to_contain_text("uses nccl: yes")
    colours = page.evaluate(
        "[...document.querySelectorAll('#communication .flag')].map(e => getComputedStyle(e).color)"
    )
    warn = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--warn')")
    assert colours and all(c != "rgb(138, 90, 0)" for c in colours), (colours, warn)


def test_lists_export_csv_and_json_submit_marks_unserved_profiles_and_cancel_asks(
    page, live_server, user, problems, redis_conn, django_capture_on_commit_callbacks
):
    """Defects 9, 10 and the cancel confirmation of 11."""
    from playwright.sync_api import expect

    _worker(redis_conn, "cpu-gloo-2", busy=False)
    base = live_server.url
    _sign_in(page, base, user.username, "/submit/")
    options = page.eval_on_selector_all("#id_profile option", "os => os.map(o => [o.value, o.textContent])")
    marked = {value for value, text in options if "no worker" in text}
    assert "cpu-gloo-2" not in marked and "h200-nvlink-4" in marked

    queued = _submission(user, capture=django_capture_on_commit_callbacks)
    for url, key in (("/", "id"), ("/submissions/", "problem"), ("/contribute/proposals/", None)):
        answer = page.request.get(f"{base}{url}?format=json")
        assert answer.headers["content-type"] == "application/json", url
        rows = answer.json()["rows"]
        assert key is None or rows and key in rows[0]
        assert page.request.get(f"{base}{url}?format=csv").headers["content-type"].startswith("text/csv")

    page.goto(f"{base}/submissions/{queued.pk}/")
    questions = []
    page.once("dialog", lambda d: (questions.append(d.message), d.dismiss()))
    page.click("#cancel-form button")
    page.wait_for_timeout(300)
    assert questions and questions[0].startswith(f"Cancel submission #{queued.pk}?")
    expect(page.locator("#state")).to_have_text("queued")
    page.once("dialog", lambda d: d.accept())
    page.click("#cancel-form button")
    expect(page.locator("#state")).to_have_text("cancelled")


def test_histogram_counts_are_whole_numbers_and_the_favicon_is_there(
    page, live_server, user, problems, django_capture_on_commit_callbacks
):
    """Defect 11: integer count ticks on the speedup histogram; a favicon on every page (no 404)."""
    for speedup in (1.1, 1.15, 2.0):  # a GPU profile: CPU profiles time only as a pipeline check, no histogram
        _submission(user, speedup=speedup, capture=django_capture_on_commit_callbacks, profile="h200-nvlink-4")
    page.goto(f"{live_server.url}/problems/{ALL_REDUCE}/?profile=h200-nvlink-4")
    page.wait_for_selector('#speedup-chart[data-drawn="1"] .main-svg')
    ticks = page.eval_on_selector_all("#speedup-chart .ytick text", "ts => ts.map(t => t.textContent)")
    assert ticks and all(re.fullmatch(r"\d+", t) for t in ticks), ticks
    icon = page.get_attribute("link[rel=icon]", "href")
    assert page.request.get(live_server.url + icon).status == 200
    assert not [u for u in page.not_found if "favicon" in u], page.not_found


def test_user_page_run_table_cells_sit_under_their_headers(page, live_server, user, problems):
    """The user page's run table has the ranking's "#" column in its rows too: every row spans as many columns as
    the header, and each figure sits under its own header (on screen, not only in the markup)."""
    problems.exclude(id__in={p for p, _ in fx.OUTCOMES}).update(is_active=False)  # so the first run is ranked
    ranked = fx.make_run(user)
    fx.make_run(user, manifest=dict(fx.MANIFEST, model="cpu-coder", hardware="cpu-gloo-2"))  # verdicts only
    assert ranked.score.status == "ranked"
    page.goto(f"{live_server.url}/users/{user.username}/")
    layout = page.evaluate("""() => {
        const table = document.querySelector('#user-runs table');
        const heads = [...table.querySelectorAll('thead th')];
        const label = th => th.textContent.replace(/[▲▼]/g, '').trim();
        return {headers: heads.map(label), rows: [...table.querySelectorAll('tbody tr')].map(tr => {
            let col = 0; const cells = {};
            for (const td of tr.children) {
                const th = heads[col], a = td.getBoundingClientRect(), b = th ? th.getBoundingClientRect() : null;
                if (td.dataset.metric) cells[td.dataset.metric] = [label(th || td), b && a.left >= b.left - 1
                                                                    && a.left <= b.right];
                col += td.colSpan;
            }
            return {span: col, cells: cells};
        })};
    }""")
    assert layout["headers"][0] == "#" and len(layout["rows"]) == 2, layout
    expected = {
        "rank": "#",
        "pass_at_k": "pass@k",
        "pass_at_1": "pass@1",
        "fast_1": "fast₁@k",
        "fast_1_5": "fast₁.₅@k",
        "fast_2": "fast₂@k",
        "speedup": "Geomean",
        "roofline": "Roofline",
        "coverage": "Coverage",
        "timing": "fast₁@k",
    }
    for row in layout["rows"]:
        assert row["span"] == len(layout["headers"]), layout
        for metric, (header, under) in row["cells"].items():
            assert header == expected[metric] and under, (metric, header, layout)
    assert {"rank", "speedup", "timing"} <= {m for row in layout["rows"] for m in row["cells"]}
