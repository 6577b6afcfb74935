"""The ranking tables and the long pages measured in a real browser (Debian's headless Chromium driven by Playwright)
at the widths a newcomer used: 390 px (a phone), 1366 px and 1920 px (laptops and desktops).

A table fits its box at 1366 and 1920 px (the box is ``.table-wrap``: it scrolls sideways inside itself, never the
page); at 390 px a wide table may scroll inside its box, with a scrollbar the reader sees. No page is wider than the
viewport, and the pages that were thousands of pixels tall for no reason (the queue list on a phone, the catalogue
at 1366 px) are not. Skipped only when /usr/bin/chromium is absent.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.browser import needs_chromium
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True)]

# A profile that measures speed, the fixture runs' own: the problem ranking then shows figures, intervals and protocols.
TIMED_PROFILE = "h200-nvlink-2"

# Every table's box on the page: [id of the table, box's scroll width, box's client width, the page's width].
BOXES = """() => [...document.querySelectorAll('.table-wrap')].map(w => {
    const t = w.querySelector('table');
    return [t ? (t.id || t.className) : '', w.scrollWidth, w.clientWidth, w.getBoundingClientRect().right];
})"""
# What a table box's scrollbar looks like: its overflow style and the height the bar takes (offset - client).
SCROLLBAR = """() => [...document.querySelectorAll('.table-wrap')].filter(w => w.scrollWidth > w.clientWidth + 1)
    .map(w => [getComputedStyle(w).overflowX,
               w.offsetHeight - w.clientHeight - parseFloat(getComputedStyle(w).borderTopWidth)
               - parseFloat(getComputedStyle(w).borderBottomWidth)])"""


@pytest.fixture
def page(chromium_page):
    yield chromium_page
    assert not chromium_page.errors, f"JavaScript errors on the pages: {chromium_page.errors}"


@pytest.fixture
def page_with_scrollbars(monkeypatch):
    """A tab that draws scrollbars as a reader's browser does: Playwright starts headless Chromium with
    --hide-scrollbars, which makes every scrollbar zero-sized whatever the page's style."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM, CHROMIUM_ARGS

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # as tests.browser.chromium_page explains
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, ignore_default_args=["--hide-scrollbars"]
        )
        tab = browser.new_context().new_page()
        tab.set_default_timeout(30_000)
        yield tab
        browser.close()


@pytest.fixture
def seeded(user, problems, django_user_model, django_capture_on_commit_callbacks):
    """Rankings as wide as real ones get: solo solutions by users with long names and model runs with long names
    and agentic protocols, all on a profile that measures speed."""
    for n, speedup in enumerate((1.31, 2.07, 0.93, 1.12)):
        who = django_user_model.objects.create_user(username=f"kernel-engineer-number-{n}", password="x" * 20)
        with django_capture_on_commit_callbacks(execute=True):
            submission = submission_create(
                user=who,
                problem=ALL_REDUCE,
                profile=TIMED_PROFILE,
                filename="s.py",
                source=CORRECT.read_text() + f"\n# variant {n}\n",
            )
        result_record(submission_id=submission.pk, document=passed_document(speedup))
    fx.make_run(user)
    fx.make_run(
        user,
        manifest=dict(
            fx.MANIFEST,
            protocol="agentic",
            turn_budget=40,
            tokens=3_400_000,
            wall_time_s=7_200,
            model="a-rather-long-model-name-70b-instruct-preview",
        ),
    )
    fx.make_run(user, manifest=dict(fx.MANIFEST, model="cpu-coder", hardware="cpu-gloo-2"))  # verdicts only
    call_command("seed_demo", runs=12, problems=6, attempts=2, users=4)  # what `make run` shows a newcomer
    return user


def _visit(page, url: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_load_state("load")


def _page_size(page) -> tuple[int, int, int]:
    return tuple(
        page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth, document.documentElement.scrollHeight]"
        )
    )


@pytest.mark.parametrize("width", [1366, 1920])
def test_ranking_tables_fit_their_boxes_on_laptops_and_desktops(page, live_server, seeded, width):
    """/runs/, a problem's ranking and the user page's runs: every table no wider than its box, every box inside the
    viewport, the page not wider than the window."""
    base = live_server.url
    pages = ["/runs/", f"/problems/{ALL_REDUCE}/?profile={TIMED_PROFILE}", f"/users/{seeded.username}/"]
    cut = []
    for url in pages:
        _visit(page, base + url, width)
        boxes = page.evaluate(BOXES)
        assert boxes, f"no table box on {url}"
        for table, scroll, client, right in boxes:
            if scroll > client + 1 or right > width + 1:
                cut.append(f"{url} at {width} px: {table} is {scroll} px in a {client} px box ending at {right}")
        scroll_width, inner, _ = _page_size(page)
        if scroll_width > inner:
            cut.append(f"{url} at {width} px: the page is {scroll_width} px wide in a {inner} px window")
    assert not cut, cut


def test_wide_tables_scroll_visibly_inside_their_box_on_a_phone(page_with_scrollbars, live_server, seeded):
    """At 390 px the same tables may be wider than the screen: then their box scrolls, with a scrollbar that takes
    room (not an overlay that appears only while scrolling), and the page itself stays 390 px wide."""
    page, base = page_with_scrollbars, live_server.url
    for url in ["/runs/", f"/problems/{ALL_REDUCE}/?profile={TIMED_PROFILE}", f"/users/{seeded.username}/"]:
        _visit(page, base + url, 390)
        scroll_width, inner, _ = _page_size(page)
        assert scroll_width <= inner, f"{url}: the page is {scroll_width} px wide at 390 px"
        bars = page.evaluate(SCROLLBAR)
        assert bars, f"{url}: no table needs to scroll at 390 px, so this test checks nothing"
        for overflow, bar in bars:
            assert overflow in ("auto", "scroll") and bar >= 6, (url, overflow, bar)


def test_docs_and_queues_fit_a_phone(page, live_server, problems):
    """At 390 px: the protocol document is no wider than the screen (its tables and code scroll inside their own
    boxes) and the queue list is a short page, not thousands of pixels of one-word lines."""
    base = live_server.url
    for url in ["/docs/", "/docs/protocol/", "/docs/model-runs/", "/docs/threat-model/", "/docs/architecture/"]:
        _visit(page, base + url, 390)
        scroll_width, inner, _ = _page_size(page)
        assert scroll_width <= inner, f"{url}: {scroll_width} px wide at 390 px"
    _visit(page, base + "/queues/", 390)
    scroll_width, inner, height = _page_size(page)
    rows = page.evaluate(
        "[...document.querySelectorAll('#queue-table tbody tr')].map(r => Math.round(r.getBoundingClientRect().height))"
    )
    assert rows and max(rows) <= 160, rows  # a profile's row was 221-245 px, its description one word a line
    assert scroll_width <= inner and height <= 2000, (scroll_width, height)  # 3,196 px before


def test_the_catalogue_is_not_a_wall_at_1366_px(page, live_server, problems):
    """The home page lists every problem (over a hundred): one compact row each (why a problem is hard opens on
    demand), so the catalogue is not 21,000 px tall (about 210 px a problem) as it was."""
    _visit(page, live_server.url + "/", 1366)
    scroll_width, inner, height = _page_size(page)
    rows = page.evaluate("document.querySelectorAll('section.category tbody tr').length")
    assert rows >= 100, rows
    assert scroll_width <= inner
    assert height <= rows * 125, f"{height} px for {rows} problems"
    assert page.evaluate("document.querySelectorAll('section.category details.hard').length") >= 100


def test_the_catalogue_is_a_list_of_cards_on_a_phone(page, live_server, problems):
    """At 390 px each problem is one card: its title, id and summary across the screen, its figures labelled on one
    line under them, no table to scroll sideways. As seven columns the title took a 100 px column and the home page
    was 32,000 px tall (about 300 px a problem)."""
    _visit(page, live_server.url + "/", 390)
    scroll_width, inner, height = _page_size(page)
    rows = page.evaluate("document.querySelectorAll('section.category tbody tr').length")
    assert rows >= 100, rows
    assert scroll_width <= inner
    assert height <= rows * 170, f"{height} px for {rows} problems at 390 px"
    cards = page.evaluate("""() => [...document.querySelectorAll('section.category tbody tr')].slice(0, 20).map(tr => {
        const [title, ...cells] = [...tr.children].filter(td => getComputedStyle(td).display !== 'none');
        const box = title.getBoundingClientRect();
        return [Math.round(box.width), new Set(cells.map(td => Math.round(td.getBoundingClientRect().top))).size,
                cells.map(td => getComputedStyle(td, '::before').content)];
    })""")
    for width, lines, labels in cards:
        assert width >= 330, width  # the title across the card, not a 100 px column
        assert lines == 1, lines  # the figures on one line
        assert labels == ['"World sizes "', '"Leader "', '"Best "', '"Solutions "'], labels
    assert not page.evaluate(
        "[...document.querySelectorAll('.table-wrap')].some(w => w.scrollWidth > w.clientWidth + 1)"
    )


@pytest.mark.parametrize("width", [390, 1366, 1920])
def test_every_page_of_the_tour_has_the_site_layout_and_no_sideways_scroll(page, live_server, seeded, width):
    """The pages the README's tour and the navigation lead to, and the error and password-reset pages: each has the
    site's header and footer, none is wider than the window, and from 1366 px up no table is wider than its box."""
    from leaderboard.models import ModelRun

    runs = list(ModelRun.objects.filter(user=seeded).order_by("pk").values_list("pk", flat=True))
    base = live_server.url
    urls = [
        "/",
        f"/problems/{ALL_REDUCE}/",
        "/runs/",
        f"/runs/{runs[0]}/",
        f"/runs/compare/?a={runs[0]}&b={runs[1]}",
        "/queues/",
        "/datasets/",
        "/docs/",
        "/docs/relation-to-pkb/",
        "/docs/backends/cuda/",
        "/api/docs/",
        "/accounts/login/",
        "/accounts/signup/",
        "/accounts/password-reset/",
        "/no/such/page/",
    ]
    wrong = []
    for url in urls:
        _visit(page, base + url, width)
        laid_out = page.evaluate(
            "!!document.querySelector('header.site-header nav') && !!document.querySelector('footer.site-footer')"
        )
        scroll_width, inner, _ = _page_size(page)
        if not laid_out:
            wrong.append(f"{url}: no site layout")
        if scroll_width > inner:
            wrong.append(f"{url} at {width} px: {scroll_width} px wide")
        if width >= 1366:  # from laptop widths up every table fits its box
            wrong += [
                f"{url} at {width} px: {table} is {scroll} px in a {client} px box"
                for table, scroll, client, _ in page.evaluate(BOXES)
                if scroll > client + 1
            ]
    assert not wrong, wrong
