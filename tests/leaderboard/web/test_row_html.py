"""The rows of the home page's catalogue, of the ranking of model runs, of a run's grid and of a user's runs are
built in Python (``web/row_html.py``): each page holds, byte for byte, what the template loops they replaced wrote
for the same rows, over seeded data with text that must be escaped, runs without a score, untimed profiles and
leaders of both kinds (a run, a person)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.template import Context, Template

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, Problem, RunScore

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
