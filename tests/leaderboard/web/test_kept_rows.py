"""Rows of the rankings are kept once built (``rankings/memo.py``: a run's row and exported record, a problem's ranking
row, the ranking's score-against-cost chart, a problem's row of the catalogue, a run's record in the API), keyed by
everything they are built from: a page rendered with the rows kept is the page rendered afresh, and a run whose score,
progress or owner's name changes shows the change on the next render of every page and export."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, Problem, RunScore, StandingEntry
from leaderboard.rankings import memo, tables
from leaderboard.rankings.services import run_protocol_labels_rebuild
from leaderboard.web import kept_rows, run_output

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def uncached(settings):
    settings.ARENA_PAGE_CACHE = False  # every request renders its page: what is kept is the rows alone
    settings.ARENA_VERIFY = False


def _forget() -> None:
    memo.forget_all()


def _pages(run: ModelRun, problem: Problem, profile: str) -> list[str]:
    owner = run.user.get_username()
    return [
        "/runs/",
        "/runs/?sort=-fast_2&per_page=5&page=2",
        "/runs/?format=csv",
        "/runs/?format=json",
        "/runs/?format=csv&table=unranked",
        f"/users/{owner}/",
        f"/users/{owner}/?format=json",
        f"/problems/{problem.id}/?profile={profile}",
        "/",
        "/api/rankings/model-runs/?page_size=100",
        "/api/rankings/model-runs/?standing=all&sort=-fast_2",
    ]


def _body(response) -> bytes:
    assert response.status_code == 200
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_page_with_its_rows_kept_is_the_page_rendered_afresh(client):
    seed_demo(runs=30, problems=4, attempts=2, users=3, seed=7, log=lambda _: None)
    run = ModelRun.objects.filter(score__status="ranked").order_by("pk").first()
    entry = StandingEntry.objects.select_related("standing").order_by("pk").first()
    paths = _pages(run, entry.standing.problem, entry.standing.profile)
    _forget()
    fresh = [_body(client.get(path)) for path in paths]
    assert len(kept_rows.ROWS) and len(tables.RECORDS) and len(run_output.RECORDS), "the rows were kept"
    assert [_body(client.get(path)) for path in paths] == fresh


def test_a_run_that_changes_shows_its_new_figures_on_the_next_render_of_every_page(client):
    seed_demo(runs=30, problems=4, attempts=2, users=3, seed=7, log=lambda _: None)
    run = ModelRun.objects.filter(score__status="ranked").order_by("pk").first()
    entry = StandingEntry.objects.select_related("standing").order_by("pk").first()
    paths = _pages(run, entry.standing.problem, entry.standing.profile)
    for path in paths:  # every row built and kept
        _body(client.get(path))

    RunScore.objects.filter(model_run=run).update(pass_at_1=0.123456)
    ModelRun.objects.filter(pk=run.pk).update(tokens=4_321_000)
    run_protocol_labels_rebuild()  # a protocol written outside the services: the rebuild writes its stored label
    get_user_model().objects.filter(pk=run.user_id).update(username="renamed-owner")
    paths = _pages(ModelRun.objects.get(pk=run.pk), entry.standing.problem, entry.standing.profile)

    ranking = client.get("/runs/?per_page=500").content.decode()
    row = ranking[ranking.index(f'<tr data-run="{run.pk}"') :].split("</tr>", 1)[0]
    assert "12.3 %" in row and "4.3M tokens" in row and "renamed-owner" in row
    assert '"tokens": 4321000' in ranking  # the score-against-cost chart draws the run's new cost
    exported = {
        int(r["id"]): r
        for r in csv.DictReader(io.StringIO(_body(client.get("/runs/?format=csv&per_page=500")).decode()))
    }
    assert exported[run.pk]["pass_at_1"] == "0.123456" and exported[run.pk]["user"] == "renamed-owner"
    rows = json.loads(_body(client.get("/users/renamed-owner/?format=json")))["rows"]
    assert {r["id"]: r["protocol_tokens"] for r in rows}[run.pk] == 4_321_000
    api = json.loads(_body(client.get("/api/rankings/model-runs/?page_size=100&standing=all")))["results"]
    record = {r["id"]: r for r in api}[run.pk]
    assert record["user"] == "renamed-owner" and record["scores"]["pass_at_1"] == 0.123456

    kept = [_body(client.get(path)) for path in paths]
    _forget()
    assert [_body(client.get(path)) for path in paths] == kept  # nothing kept from before the change shows


def test_a_problem_ranking_row_follows_its_stored_entry(client):
    seed_demo(runs=30, problems=4, attempts=2, users=3, seed=7, log=lambda _: None)
    entry = StandingEntry.objects.select_related("standing").filter(timed=True).order_by("pk").first()
    path = f"/problems/{entry.standing.problem_id}/?profile={entry.standing.profile}"
    before = client.get(path).content.decode()
    StandingEntry.objects.filter(pk=entry.pk).update(solution_median_us=4321.5)
    after = client.get(path).content.decode()
    assert after != before
    _forget()
    assert client.get(path).content.decode() == after


def test_a_problem_row_of_the_catalogue_follows_its_problem_and_its_leader(client):
    seed_demo(runs=30, problems=4, attempts=2, users=3, seed=7, log=lambda _: None)
    problem = Problem.objects.filter(suite="demo").order_by("pk").first()
    before = client.get("/").content.decode()
    Problem.objects.filter(pk=problem.pk).update(title="A renamed problem", world_sizes=[2, 4, 8, 16])
    after = client.get("/").content.decode()
    assert "A renamed problem" in after and "A renamed problem" not in before
    row = after[after.index("A renamed problem") :].split("</tr>", 1)[0]
    assert "2, 4, 8, 16" in row
    _forget()
    assert client.get("/").content.decode() == after
