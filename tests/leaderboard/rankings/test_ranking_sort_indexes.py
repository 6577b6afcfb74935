"""Every order the ranking of runs offers over the ranked runs is read from an index in that order (PostgreSQL), not
by sorting every ranked run: a page costs its own rows whatever the number of runs. The run's own columns are never
null, so their order is written without "NULLS LAST" and one index serves both ways. The order by the owner's name
descending, named here, is still sorted in full; those by a column of few values (profile, precision, k) are read
in order but sort each group of equal runs whole (their ties are broken by the score's pass@k, another table's)."""

from __future__ import annotations

import pytest
from django.db import connection

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.rankings import run_selectors, run_tables

pytestmark = pytest.mark.django_db

# Sorted in full, not read in order (the owner's name is another table's, its index read one way only).
SORTED_IN_FULL = {"-user"}


@pytest.fixture
def seeded(problems):
    seed_demo(runs=14, problems=8, attempts=2, users=4, seed=11, log=lambda _: None)


def _sorts(plan: dict) -> list[str]:
    found = [plan["Node Type"]] if plan["Node Type"] in ("Sort", "Incremental Sort") else []
    for child in plan.get("Plans", []):
        found += _sorts(child)
    return found


def _plan_sorts(sort: str, standing: str = run_selectors.RANKED) -> list[str]:
    """The sort steps of the plan of a page of the ranking sorted by ``sort``, with sorting every row and reading
    every row made as dear as PostgreSQL makes them (so an index in that order is taken wherever there is one)."""
    runs = run_selectors.model_run_ranking(standing=standing, sort=sort)
    sql, params = runs.values_list("pk")[:50].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_seqscan = off")
        try:
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
        finally:
            cursor.execute("RESET enable_sort")
            cursor.execute("RESET enable_seqscan")
    return _sorts((plan[0] if isinstance(plan, list) else plan)["Plan"])


SORT_KEYS = [c.key for c in run_tables.RUN_COLUMNS if c.sortable and c.order_by]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plans are PostgreSQL's")
@pytest.mark.parametrize("way", ["", "-"])
@pytest.mark.parametrize("key", SORT_KEYS)
def test_every_offered_order_of_the_ranked_runs_is_read_from_an_index(seeded, key, way):
    if way + key in SORTED_IN_FULL:
        pytest.skip("named as still sorted in full")
    sorts = _plan_sorts(way + key)
    # (only the rows equal on the indexed columns are sorted among themselves)
    assert "Sort" not in sorts, (way + key, sorts)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plans are PostgreSQL's")
def test_the_orders_still_sorted_in_full_are_the_ones_named(seeded):
    for sort in SORTED_IN_FULL:
        assert sort.lstrip("-") in SORT_KEYS
        assert "Sort" in _plan_sorts(sort), sort


def test_a_column_of_the_run_never_null_is_sorted_without_nulls_last_and_a_score_with_it():
    table = run_tables.run_ranking_table()
    for sort in ("created", "-created", "-tokens", "model"):
        runs = table.order(run_selectors.model_run_ranking(standing=run_selectors.ALL), sort)
        assert "NULLS LAST" not in str(runs.query).split("ORDER BY")[1].split(",")[0], sort
    for sort in ("-speedup", "fast_1", "pass_at_k"):  # (null where a run has no score, or the profile no timing)
        runs = table.order(run_selectors.model_run_ranking(standing=run_selectors.ALL), sort)
        assert "NULLS LAST" in str(runs.query).split("ORDER BY")[1].split(",")[0], sort
