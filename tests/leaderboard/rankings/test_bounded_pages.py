"""Pages and exports of bounded cost: the ranking of runs makes a fixed number of queries and shows its rank ranges,
the comparison's picker lists the newest runs and still compares any run by its number, and an export comes a page at
a time with the next page's address, the pages together being the whole table."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun
from leaderboard.rankings import run_selectors, run_tables, tables

pytestmark = pytest.mark.django_db
RANKING_QUERIES = 10  # the most queries the ranking of runs may make, on any amount of data


@pytest.fixture
def seeded(problems):
    seed_demo(runs=14, problems=8, attempts=2, users=4, seed=11, log=lambda _: None)


def _json(client, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, url
    return json.loads(b"".join(response.streaming_content) if response.streaming else response.content)


def test_the_ranking_of_runs_makes_the_same_queries_and_shows_its_ranges(client, seeded):
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/runs/?per_page=4").content.decode()
    assert len(queries) <= RANKING_QUERIES, len(queries)
    runs = run_selectors.model_run_ranking(standing=run_selectors.RANKED, sort=run_tables.RUN_DEFAULT_SORT)
    ranges = run_selectors.model_run_rank_ranges(runs=runs)
    first = runs[0]
    from leaderboard.rankings.significance import rank_label

    assert f"/runs/{first.pk}/" in page and rank_label(ranges[first.pk]) in page


def test_the_comparison_lists_the_newest_runs_and_compares_any_by_its_number(client, seeded, monkeypatch):
    monkeypatch.setattr(run_selectors, "COMPARE_CHOICES", 3)
    ids = list(ModelRun.objects.order_by("-created_at", "-id").values_list("pk", flat=True))
    page = client.get("/runs/compare/").content.decode()
    assert page.count('<option value="') == 6  # two pickers of the three newest runs
    oldest, newest = ids[-1], ids[0]
    page = client.get(f"/runs/compare/?a={oldest}&b={newest}").content.decode()
    assert f'<option value="{oldest}" selected>' in page and "there is no model run" not in page
    assert "there is no model run #999999" in client.get("/runs/compare/?a=999999&b=1").content.decode()


def test_an_export_comes_a_page_at_a_time_and_its_pages_are_the_whole_table(client, seeded):
    whole = [
        r.pk for r in run_selectors.model_run_ranking(standing=run_selectors.RANKED, sort=run_tables.RUN_DEFAULT_SORT)
    ]
    assert len(whole) > 5
    seen, url = [], "/runs/?format=json&per_page=5"
    while url:
        body = _json(client, url)
        assert len(body["rows"]) <= 5 and body["per_page"] == 5
        seen += [r["id"] for r in body["rows"]]
        url = body["next"] and "/runs/" + body["next"]
    assert seen == whole
    csv = client.get("/runs/?format=csv&per_page=5")
    assert 'rel="next"' in csv["Link"] and "page=2" in csv["Link"]
    assert len(b"".join(csv.streaming_content).decode().strip().splitlines()) == 6  # the header and five rows
    assert len(_json(client, "/runs/?format=json")["rows"]) == min(len(whole), tables.EXPORT_PAGE_ROWS)
    assert _json(client, "/runs/?format=json&per_page=100000")["per_page"] == tables.MAX_EXPORT_PAGE_ROWS


def test_a_users_runs_export_reads_their_runs_and_not_their_best_solutions(client, seeded):
    username = ModelRun.objects.order_by("pk").first().user.get_username()
    with CaptureQueriesContext(connection) as queries:
        exported = _json(client, f"/users/{username}/?format=json")
    assert exported["rows"] and not any("leaderboard_result" in q["sql"] for q in queries.captured_queries)
    assert {r["id"] for r in exported["rows"]} == set(
        ModelRun.objects.filter(user__username=username).values_list("pk", flat=True)
    )
    # the page and the solutions' export still read them
    assert client.get(f"/users/{username}/?format=csv&table=solutions").status_code == 200
