"""Tables of model runs read plain rows (``rankings/run_rows.RunRow``) instead of model instances: every exported
record, every row of HTML and every serialized run equals what the model instance with its score and owner gave, and
the rank ranges of a page equal those of the whole ranking, for every figure a rank is read from."""

from __future__ import annotations

import pytest

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import run_rows, run_selectors, run_tables, standing
from leaderboard.web import row_html
from leaderboard.web.serializers import ModelRunOutputSerializer
from leaderboard.web.templatetags.arena import _RUN_FILTERS

pytestmark = pytest.mark.django_db
AWKWARD = """=<b class="x">A & 'B'</b>"""
URLS = {"problems_url": "/problems/", "runs_url": "/runs/", "users_url": "/users/", "submissions_url": "/s/"}


@pytest.fixture
def seeded(rf):
    seed_demo(runs=24, problems=8, attempts=2, users=4, seed=7, log=lambda _: None)
    runs = list(ModelRun.objects.order_by("pk"))
    ModelRun.objects.filter(pk=runs[0].pk).update(model=AWKWARD, provider=AWKWARD, precision="", open_weights=None)
    RunScore.objects.filter(model_run_id=runs[1].pk).delete()  # a run without a score row yet
    return runs


@pytest.mark.parametrize("sort", ["-pass_at_k", "-fast_2", "speedup", "-created", "model"])
def test_a_run_row_reads_as_the_model_instance_did(seeded, rf, sort):
    table = run_tables.run_ranking_table()
    ordered = run_selectors.model_run_ranking(sort=sort)
    instances = list(ordered)
    rows = run_rows.run_rows(ordered)
    assert [r.pk for r in rows] == [r.pk for r in instances] and len(rows) == len(seeded)
    assert any(r.score is None for r in rows) and any(r.model == AWKWARD for r in rows)
    request = rf.get("/api/rankings/model-runs/")
    for instance, row in zip(instances, rows):
        assert table.record(row) == table.record(instance)
        assert row_html.run_ranking_row(row, URLS, _RUN_FILTERS) == row_html.run_ranking_row(
            instance, URLS, _RUN_FILTERS
        )
        assert row_html.run_unranked_row(row, URLS, _RUN_FILTERS) == row_html.run_unranked_row(
            instance, URLS, _RUN_FILTERS
        )
        assert row_html.user_run_row(row, "/runs/", _RUN_FILTERS) == row_html.user_run_row(
            instance, "/runs/", _RUN_FILTERS
        )
        context = {"request": request}
        assert (
            ModelRunOutputSerializer(row, context=context).data
            == ModelRunOutputSerializer(instance, context=context).data
        )
    # What a page's rows show is the same read with only the columns they show.
    for instance, shown in zip(instances, run_rows.shown_run_rows(ordered)):
        for row in (row_html.run_ranking_row, row_html.run_unranked_row):
            assert row(shown, URLS, _RUN_FILTERS) == row(instance, URLS, _RUN_FILTERS)
        assert row_html.user_run_row(shown, "/runs/", _RUN_FILTERS) == row_html.user_run_row(
            instance, "/runs/", _RUN_FILTERS
        )
    # What an export writes is the same read with only the columns it exports.
    exported = run_rows.exported_run_rows(ordered)
    assert [table.record(row) for row in exported] == [table.record(instance) for instance in instances]
    # A page of the queryset (sliced) reads the same rows.
    assert [r.pk for r in run_rows.run_rows(ordered[3:9])] == [r.pk for r in instances[3:9]]


@pytest.mark.parametrize("sort", [None, "-pass_at_k", "-fast_1", "fast_1_5", "-fast_2", "-speedup", "model"])
def test_the_rank_ranges_of_a_page_are_those_of_the_whole_ranking(seeded, sort):
    for filters in (None, run_selectors.model_run_filters({"mode": "agentic"})):
        runs = run_selectors.model_run_ranking(
            filters=filters, standing=standing.RANKED, sort=sort or run_tables.RUN_DEFAULT_SORT
        )
        whole = run_selectors.model_run_rank_ranges(runs=runs, sort=sort)
        assert whole
        count, ends = run_selectors.ranked_count_and_ends(filters=filters, sort=sort)
        assert count == runs.count()
        for start in range(0, runs.count(), 5):
            page = (run_rows.run_rows if start % 2 else run_rows.shown_run_rows)(runs[start : start + 5])
            run_selectors.set_rank_ranges(rows=page, ends=ends)
            assert {r.pk: r.rank_range for r in page} == {r.pk: whole.get(r.pk) for r in page}


@pytest.mark.parametrize("sort", [None, "-pass_at_k", "-fast_1", "fast_1_5", "-fast_2", "-speedup", "model"])
def test_one_stored_row_gives_the_ranking_pages_counts_and_the_rank_ranges_of_the_whole_ranking(seeded, sort):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for filters in (run_selectors.model_run_filters(None), run_selectors.model_run_filters({"mode": "agentic"})):
        runs = run_selectors.model_run_ranking(
            filters=filters, standing=standing.RANKED, sort=sort or run_tables.RUN_DEFAULT_SORT
        )
        whole = run_selectors.model_run_rank_ranges(runs=runs, sort=sort)
        assert whole
        with CaptureQueriesContext(connection) as queries:
            ranked, unranked, ends = run_selectors.model_run_page_standing(filters=filters, sort=sort)
        assert len(queries) == 1
        assert (ranked, unranked) == run_selectors.model_run_standing_counts(runs=filters.qs)
        for start in range(0, runs.count(), 5):
            page = run_rows.shown_run_rows(runs[start : start + 5])
            run_selectors.set_rank_ranges(rows=page, ends=ends)
            assert {r.pk: r.rank_range for r in page} == {r.pk: whole.get(r.pk) for r in page}
