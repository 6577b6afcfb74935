"""The rows of the home page's catalogue, of the ranking of model runs, of a run's grid and of a user's runs are
built in Python (``web/row_html.py``): each page holds, byte for byte, what the template loops they replaced wrote
for the same rows, over seeded data with text that must be escaped, runs without a score, untimed profiles and
leaders of both kinds (a run, a person)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils.safestring import mark_safe

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, Problem, RunScore
from leaderboard.rankings.overview import CategorySummary
from leaderboard.web import catalogue_html
from leaderboard.web.templatetags.arena import times

pytestmark = pytest.mark.django_db

# The loops of templates/home.html and templates/leaderboard/model_run_list.html before their rows were built in
# Python (the previous code, which the rows must still equal), kept as they were in previous_rows/.
PREVIOUS = Path(__file__).resolve().parent / "previous_rows"
CATALOGUE_LOOP = (PREVIOUS / "catalogue.html").read_text(encoding="utf-8")
RANKED_LOOP = (PREVIOUS / "ranked_runs.html").read_text(encoding="utf-8")
UNRANKED_LOOP = (PREVIOUS / "unranked_runs.html").read_text(encoding="utf-8")
USER_RUNS_LOOP = (PREVIOUS / "user_runs.html").read_text(encoding="utf-8")
GRID_LOOP = (PREVIOUS / "run_grid.html").read_text(encoding="utf-8")
URLS = ("problems_url", "runs_url", "users_url", "submissions_url")
AWKWARD = """<b class="x">A & 'B'</b>"""


@pytest.fixture(autouse=True)
def uncached(settings):
    settings.ARENA_PAGE_CACHE = False
    settings.ARENA_VERIFY = False


def _as_the_loop_wrote(loop: str, context, **names) -> str:
    return Template("{% load arena %}" + loop).render(Context({**{k: context.get(k) for k in URLS}, **names}))


@pytest.fixture
def seeded():
    seed_demo(runs=30, problems=12, attempts=2, users=4, seed=5, log=lambda _: None)
    problem = Problem.objects.filter(suite="demo").order_by("pk").first()
    Problem.objects.filter(pk=problem.pk).update(
        title=AWKWARD, summary=AWKWARD, hard=AWKWARD, codebase=AWKWARD, tags=Problem.tags_column(["a&b", "c d"])
    )
    runs = list(ModelRun.objects.order_by("pk"))
    ModelRun.objects.filter(pk=runs[0].pk).update(model=AWKWARD, provider=AWKWARD, precision="")
    RunScore.objects.filter(model_run_id=runs[1].pk).delete()  # a run without a score row yet
    return runs


def test_the_catalogue_rows_are_what_the_template_loop_wrote(client, seeded):
    response = client.get("/")
    page = response.content.decode()
    leaders = response.context["leaders"]
    assert any(lead.leader and lead.leader.model_run_id for lead in leaders.values())
    assert any(lead.leader and not lead.leader.model_run_id for lead in leaders.values())
    assert "&lt;b class=&quot;x&quot;&gt;A &amp; &#x27;B&#x27;&lt;/b&gt;" in page
    categories = response.context["categories"]
    assert categories
    for category, _ in categories:
        rows = _as_the_loop_wrote(CATALOGUE_LOOP, response.context, category=category, leaders=leaders)
        assert rows.count("<tr>") == len(category.problems)
        assert rows in page


CATEGORY_SUMMARY = (PREVIOUS / "category_summary.html").read_text(encoding="utf-8")  # home.html's {% if summary %}


def _summary_as_the_template_wrote(category_key: str, summary, problems_url: str) -> str:
    return Template("{% load arena %}{% if summary %}" + CATEGORY_SUMMARY + "    {% endif %}").render(
        Context({"category": {"key": category_key}, "summary": summary, "problems_url": problems_url})
    )


@pytest.mark.parametrize("query", ["", "?category=collectives", "?q=demo"])
def test_the_category_lines_are_what_the_template_wrote(client, seeded, query):
    response = client.get("/" + query)
    page = response.content.decode()
    categories = response.context["categories"]
    assert any(summary and summary.leader for _, summary in categories)
    for category, summary in categories:
        assert _summary_as_the_template_wrote(category.key, summary, response.context["problems_url"]) in page


@pytest.mark.parametrize(
    "summary",
    [
        CategorySummary("a&b", AWKWARD, 1, 1.5, AWKWARD, 1, 1),
        CategorySummary("c", "x (run #3)", 2, 12345.678, "", 2, 3),
        CategorySummary("c", "who", 0, None, "p/q", 0, 0),
        CategorySummary("c", "", 0, None, "", 1, 4),
        CategorySummary("c", "", 0, None, "", 7, 4),
        CategorySummary("c", "", 0, None, "", 0, 4),
    ],
)
def test_a_category_line_is_what_the_template_wrote_for_every_kind_of_summary(summary):
    built = catalogue_html.category_summary(summary.category, summary, "/p/?a&b=", times)
    assert built == _summary_as_the_template_wrote(summary.category, summary, "/p/?a&b=")


@pytest.mark.parametrize("query", ["", "?profile=cpu-gloo-4", "?sort=-fast_2&per_page=10&page=2"])
def test_the_rows_of_the_ranking_of_runs_are_what_the_template_loops_wrote(client, seeded, query):
    response = client.get("/runs/" + query)
    page = response.content.decode()
    ranked, unranked = response.context["table"], response.context["unranked"]
    for loop, table in ((RANKED_LOOP, ranked), (UNRANKED_LOOP, unranked)):
        rows = _as_the_loop_wrote(loop, response.context, t=table)
        assert rows.count("<tr ") == len(table["rows"])
        assert rows in page
    if not query:
        assert unranked["rows"] and ranked["rows"]
        assert any(getattr(run, "score", None) is None for run in unranked["rows"])
        assert "&lt;b class=&quot;x&quot;&gt;A &amp; &#x27;B&#x27;&lt;/b&gt;" in page


def test_the_rows_of_a_users_runs_are_what_the_template_loop_wrote(client, seeded):
    owner = seeded[0].user
    response = client.get(f"/users/{owner.get_username()}/")
    page = response.content.decode()
    table = response.context["runs"]
    assert table["rows"]
    rows = Template("{% load arena %}" + USER_RUNS_LOOP).render(Context({"t": table}))
    assert rows.count("<tr ") == len(table["rows"])
    assert rows in page
    assert "&lt;b class=&quot;x&quot;&gt;A &amp; &#x27;B&#x27;&lt;/b&gt;" in page


def test_the_rows_of_a_runs_grid_are_what_the_template_loop_wrote(client, seeded):
    timed = cpu = 0
    for run in seeded[:12]:
        response = client.get(f"/runs/{run.pk}/")
        page = response.content.decode()
        table, score = response.context["problems"], response.context["score"]
        timed, cpu = timed + bool(score.timed), cpu + (not score.timed)
        context = {k: response.context.get(k) for k in URLS}
        rows = Template("{% load arena %}" + GRID_LOOP).render(
            Context({**context, "t": table, "score": score, "run": response.context["run"]})
        )
        assert rows.count("<tr ") == len(table["rows"]) or not table["rows"]
        assert rows in page
    assert timed and cpu  # both kinds of grid were compared


PROBLEM_RANKING_LOOP = (PREVIOUS / "problem_ranking.html").read_text(encoding="utf-8")


def _ranking_rows_as_the_loop_wrote(rows, profile) -> str:
    return Template("{% load arena %}" + PROBLEM_RANKING_LOOP).render(
        Context({"t": {"rows": rows}, "profile": profile})
    )


def test_the_rows_of_a_problems_ranking_are_what_the_template_loop_wrote(client, seeded):
    from leaderboard.models import ProblemStanding

    compared = timed = 0
    standings = ProblemStanding.objects.filter(solutions__gt=0).order_by("problem_id", "profile")
    for problem_id, profile in standings.values_list("problem_id", "profile").distinct()[:12]:
        for query in ("", "&sort=-speedup&per_page=3&page=2", "&published=1"):
            response = client.get(f"/problems/{problem_id}/?profile={profile}{query}")
            assert response.status_code == 200
            rows = response.context["table"]["rows"]
            looped = _ranking_rows_as_the_loop_wrote(rows, response.context["profile"])
            assert looped.count("<tr ") == len(rows)
            assert looped in response.content.decode()
            compared += len(rows)
            timed += sum(1 for e in rows if e.timed)
    assert compared > timed > 0  # rows of both kinds, timed and pipeline checks


def test_every_kind_of_ranking_row_is_what_the_template_loop_wrote():
    """Rows the seeded data may lack: every verification state, ranks with and without a range, names to escape."""
    from datetime import datetime, timezone

    from evaluator.contract.profiles import PROFILES
    from leaderboard.rankings.solutions import RankingEntry, Verification

    base = dict(
        rank=2,
        username="a+b@c d&'<x>",
        user_id=3,
        submission_id=41,
        speedup=1.23456,
        speedup_ci_low=1.1,
        speedup_ci_high=None,
        baseline_median_us=1234.5,
        solution_median_us=0.05,
        roofline_fraction=0.004,
        submitted_at=datetime(2026, 3, 4, 23, 59, 30, tzinfo=timezone.utc),
    )
    checks = [
        None,
        Verification("verified", 50, 1.2, 1.0, 1.4, other_host=True),
        Verification("verified", 51, None, None, None, other_host=None),
        Verification("flagged", 52, 0.8, 0.7, 0.9),
        Verification("pending", 53),
    ]
    entries = [
        RankingEntry(**base, verification=check, rank_best=best, rank_worst=worst, timed=timed, **extra)
        for check in checks
        for best, worst in ((None, None), (2, 2), (1, 4))
        for timed in (True, False)
        for extra in (
            {},
            {"model_run_id": 7, "model": AWKWARD, "protocol": AWKWARD, "estimator": "pooled <x>"},
            {"protocol_revision": 0, "problem_version": 3},
        )
    ]
    for profile in (PROFILES["cpu-gloo-4"], PROFILES["h100-nvlink-8"], None):
        built = Template("{% load arena %}{% problem_ranking_rows t.rows profile %}").render(
            Context({"t": {"rows": entries}, "profile": profile})
        )
        assert _ranking_rows_as_the_loop_wrote(entries, profile) == built + "\n"  # the loop file's last newline


THEAD_LOOP = (PREVIOUS / "thead.html").read_text(encoding="utf-8")


def test_every_tables_header_row_is_what_the_template_loop_wrote(client, seeded):
    from leaderboard.models import ProblemStanding

    problem_id, profile = ProblemStanding.objects.filter(solutions__gt=0).values_list("problem_id", "profile")[0]
    run = seeded[2]
    pages = [
        "/runs/",
        "/runs/?sort=model&unranked_sort=-k&mode=agentic",
        f"/problems/{problem_id}/?profile={profile}",
        f"/problems/{problem_id}/?profile={profile}&sort=-speedup",
        f"/users/{run.user.get_username()}/?sort=-fast_2",
        f"/runs/{run.pk}/",
        f"/runs/compare/?a={seeded[2].pk}&b={seeded[3].pk}",
    ]
    seen = 0
    for url in pages:
        response = client.get(url)
        page = response.content.decode()
        values = {id(v): v for v in (response.context[k] for k in response.context.keys()) if isinstance(v, dict)}
        tables = [v for v in values.values() if "headers" in v]
        for table in tables:
            for extra in ("", mark_safe("<th>x</th>"), "<b>&</b>"):
                looped = Template(THEAD_LOOP).render(Context({"t": table, "extra_headers": extra}))
                built = Template("{% load arena %}{% table_head t %}").render(
                    Context({"t": table, "extra_headers": extra})
                )
                assert looped == built + "\n"  # the loop file's last newline
            # the pages show those header rows (a run's grid heads its attempts' columns itself)
            seen += Template("{% load arena %}{% table_head t %}").render(Context({"t": table})) in page
    assert seen >= 8


COMPARE_LOOP = (PREVIOUS / "compare_problems.html").read_text(encoding="utf-8")


def test_the_rows_of_a_comparison_are_what_the_template_loop_wrote(client, seeded):
    from types import SimpleNamespace

    from leaderboard.rankings.services import run_comparison_refresh

    compared = 0
    for a, b in ((seeded[0], seeded[1]), (seeded[2], seeded[9]), (seeded[4], seeded[3])):
        run_comparison_refresh(a_id=a.pk, b_id=b.pk)
        for query in ("", "&sort=-ratio&per_page=5&page=2"):
            response = client.get(f"/runs/compare/?a={a.pk}&b={b.pk}{query}")
            rows = response.context["table"]["rows"]
            looped = Template("{% load arena %}" + COMPARE_LOOP).render(Context({"t": {"rows": rows}}))
            assert looped.count("<tr ") == len(rows)
            assert looped in response.content.decode()
            compared += len(rows)
    assert compared
    # rows the seeded runs may lack: a problem one run did not score, a category that must be escaped (a problem's id
    # is letters, digits, "_", "-" and ".": its URL converter allows nothing else)
    side = SimpleNamespace(pass_at_k=0.5, fast_p_at_k={1.0: 0.25, 2.0: None}, best_speedup=1.5)
    rows = [
        SimpleNamespace(problem_id="cat/a_b-1.x", category=AWKWARD, a=side, b=None, speedup_ratio=None),
        SimpleNamespace(problem_id="cat2/p", category="c", a=None, b=side, speedup_ratio=2.0),
        SimpleNamespace(
            problem_id="cat/r",
            category="c",
            a=SimpleNamespace(pass_at_k=None, fast_p_at_k=None, best_speedup=None),
            b=side,
            speedup_ratio=float("nan"),
        ),
    ]
    looped = Template("{% load arena %}" + COMPARE_LOOP).render(Context({"t": {"rows": rows}}))
    built = Template("{% load arena %}{% comparison_problem_rows t.rows %}").render(Context({"t": {"rows": rows}}))
    assert looped == built + "\n"


USER_SOLUTIONS_LOOP = (PREVIOUS / "user_solutions.html").read_text(encoding="utf-8")


def test_the_rows_of_a_users_solutions_are_what_the_template_loop_wrote(client, seeded):
    from datetime import datetime, timezone

    from django.contrib.auth import get_user_model

    from leaderboard.rankings.selectors import BestSolution

    compared = 0
    for person in get_user_model().objects.filter(username__startswith="demo-user-"):
        for query in ("", "?sol_sort=-speedup&sol_per_page=2&sol_page=2"):
            response = client.get(f"/users/{person.get_username()}/{query}")
            rows = response.context["solutions"]["rows"]
            looped = Template("{% load arena %}" + USER_SOLUTIONS_LOOP).render(Context({"t": {"rows": rows}}))
            assert looped.count("<tr>") == len(rows)
            assert looped in response.content.decode()
            compared += len(rows)
    assert compared
    when = datetime(2026, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
    rows = [
        BestSolution("cat/a_b-1.x", AWKWARD, "h200-nvlink-8", 5, 1.25, 0.5, when),
        BestSolution("cat/a_b-1.x", AWKWARD, "h200-nvlink-8", 6, None, None, when),
        BestSolution("cat2/p", "t", "cpu-gloo-2", 7, 2.0, 0.1, when),
    ]
    looped = Template("{% load arena %}" + USER_SOLUTIONS_LOOP).render(Context({"t": {"rows": rows}}))
    built = Template("{% load arena %}{% user_solution_rows t.rows %}").render(Context({"t": {"rows": rows}}))
    assert looped == built + "\n"


def test_a_pages_dates_are_what_date_text_writes_in_every_time_zone():
    """The page's writer looks the zone up once; each date must still read as ``date_text`` writes it."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    from django.utils import timezone

    from leaderboard.web.row_html import date_text, page_date_text

    class Kept(dt.datetime):
        convert_to_local_time = False

    values = [
        None,
        "",
        dt.date(2026, 1, 31),
        dt.datetime(2026, 12, 31, 23, 30),  # naive: written as it is
        dt.datetime(2026, 12, 31, 23, 30, tzinfo=dt.timezone.utc),
        dt.datetime(2026, 1, 1, 0, 15, tzinfo=ZoneInfo("Pacific/Kiritimati")),
        dt.datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
        Kept(2026, 6, 30, 23, 59, tzinfo=dt.timezone.utc),
    ]
    for zone in ("UTC", "Pacific/Honolulu", "Asia/Kolkata", "Pacific/Kiritimati", "Europe/Berlin"):
        with timezone.override(ZoneInfo(zone)):
            day = page_date_text()
            assert [day(v) for v in values] == [date_text(v) for v in values], zone


PAGER_TEMPLATE = (PREVIOUS / "pager.html").read_text(encoding="utf-8")


def test_every_tables_pager_is_what_its_template_wrote(client, seeded):
    from leaderboard.models import ProblemStanding

    problem_id, profile = ProblemStanding.objects.filter(solutions__gt=0).values_list("problem_id", "profile")[0]
    run = seeded[2]
    pages = [
        "/runs/",
        "/runs/?per_page=5&page=2&sort=model",
        "/runs/?per_page=5&page=99",
        "/runs/?per_page=1&unranked_per_page=1&unranked_page=2",
        "/runs/?profile=no-such-profile&mode=agentic",
        f"/problems/{problem_id}/?profile={profile}&per_page=1",
        f"/users/{run.user.get_username()}/?per_page=2&page=2",
        f"/users/{run.user.get_username()}/?per_page=1&sol_per_page=1",
        f"/runs/{run.pk}/",
    ]
    seen = 0
    for url in pages:
        response = client.get(url)
        page = response.content.decode()
        values = {id(v): v for v in (response.context[k] for k in response.context.keys()) if isinstance(v, dict)}
        for table in [v for v in values.values() if "links" in v and "page" in v]:
            looped = Template(PAGER_TEMPLATE).render(Context({"t": table}))
            built = Template("{% load pager %}{% pager t %}").render(Context({"t": table}))
            assert looped == built + "\n", url  # the template file's last newline
            seen += built in page
    assert seen >= 10
    for count, pages_of in ((0, 1), (1, 1), (2, 1), (7, 3)):  # one row, none, several; one page and three
        table = {"name": "t<&>", "page": _Page(count, pages_of), "links": {"first": "?a=1&b=<2>", "next": "?x"},
                 "export": {"csv": "?format=csv&t='1'", "json": ""}}  # fmt: skip
        looped = Template(PAGER_TEMPLATE).render(Context({"t": table}))
        assert looped == Template("{% load pager %}{% pager t %}").render(Context({"t": table})) + "\n"
    assert Template("{% load pager %}{% pager t %}").render(Context({"t": {}})) + "\n" == Template(
        PAGER_TEMPLATE
    ).render(Context({"t": {}}))


class _Page:
    """A page of ``count`` rows in ``num_pages`` pages, as a table's context holds it."""

    def __init__(self, count: int, num_pages: int) -> None:
        self.number = 1
        self.paginator = type("Paginator", (), {"count": count, "num_pages": num_pages})()
