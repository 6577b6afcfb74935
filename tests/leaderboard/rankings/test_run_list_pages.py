"""The runs page shows a page of each of its tables, read from the database: the runs listed apart (unfinished,
partial) are paged like the ranking, never all rendered at once, and the exports still hold every run; the
score-against-cost chart marks the same Pareto front however many runs it draws."""

from __future__ import annotations

import csv
import io
import re

import pytest

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import overview

pytestmark = pytest.mark.django_db


def _rows(html: str, table: str) -> list[str]:
    body = re.search(rf'<table class="table numeric" id="{table}">.*?</table>', html, re.S)
    return re.findall(r'<tr data-run="(\d+)"', body.group(0)) if body else []


def test_runs_listed_apart_are_paged_and_exported_whole(client):
    seed_demo(runs=40, problems=6, attempts=2, users=3, seed=4, log=lambda _: None)
    apart = ModelRun.objects.exclude(score__status="ranked").count()
    assert apart > 6, "the seeded data lists runs apart"
    first = client.get("/runs/?unranked_per_page=5").content.decode()
    second = client.get("/runs/?unranked_per_page=5&unranked_page=2").content.decode()
    one, two = _rows(first, "run-unranked"), _rows(second, "run-unranked")
    assert len(one) == len(two) == 5 and not set(one) & set(two)
    assert f"{apart} runs not ranked" in first and "unranked_page=2" in first
    assert _rows(first, "run-ranking") == _rows(second, "run-ranking")  # the ranking stays on its own page
    exported = list(csv.DictReader(io.StringIO(client.get("/runs/?format=csv&table=unranked").content.decode())))
    assert len(exported) == apart


def test_the_pareto_front_is_the_runs_no_other_run_beats_on_both_score_and_cost(user):
    costs = [(100, 0.5), (200, 0.5), (200, 0.7), (50, 0.2), (300, 0.9), (300, 0.9), (400, 0.8)]
    for i, (tokens, score) in enumerate(costs):
        run = ModelRun.objects.create(
            user=user, model=f"m{i}", mode="zero-shot", k=1, tokens=tokens, wall_time_s=0, profile="h200-nvlink-4"
        )
        RunScore.objects.create(model_run=run, k=1, pass_at_k=score)
    points = overview.score_against_cost(ModelRun.objects.order_by("pk"))
    front = {(p.tokens, p.score) for p in points if p.front_tokens}
    # (200, 0.5) loses to (100, 0.5), (400, 0.8) to (300, 0.9); the two equal (300, 0.9) both stay.
    assert front == {(50, 0.2), (100, 0.5), (200, 0.7), (300, 0.9)}
    assert sum(p.front_tokens for p in points) == 5 and not any(p.front_time for p in points)
    # the chart's data: each point's fields as the page's script writes them, in the same order
    rows = overview.cost_rows(ModelRun.objects.order_by("pk"))
    assert [list(r.items()) for r in overview.cost_point_records(rows)] == [list(vars(p).items()) for p in points]
