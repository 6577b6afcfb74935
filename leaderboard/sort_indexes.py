"""The indexes that give the ranking of runs its pages in their order, so a page reads its own rows instead of sorting
every run (migrations 0019 and 0020): ``run_sort_indexes`` are ModelRun's, ``ranked_sort_indexes`` RunScore's. Each
sort the ranking offers has one; ``tests/leaderboard/rankings/test_ranking_sort_indexes.py`` checks PostgreSQL reads
every offered order from one."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

# The score figures the ranking sorts by besides pass@k (column, name in the indexes of their order).
RANKED_SORT_FIGURES = (
    ("pass_at_1", "pass_at_1"),
    ("fast_1_at_k", "fast_1"),
    ("fast_1_5_at_k", "fast_1_5"),
    ("fast_2_at_k", "fast_2"),
    ("geomean_speedup", "speedup"),
    ("mean_roofline_fraction", "roofline"),
    ("coverage", "coverage"),
)


def run_sort_indexes() -> list[models.Index]:
    """The run's columns with many values the ranking sorts by (never null, so either way is one index read forwards
    or backwards; id and created_at have theirs). Columns with a few values (profile, precision, k, mode) have theirs
    too, but ties on them are broken by the score's pass@k, which an index of this table cannot hold: a page of them
    sorts a whole group of equal runs."""
    return [
        models.Index(fields=["model"], name="run_model"),
        models.Index(fields=["tokens"], name="run_tokens"),
        models.Index(fields=["wall_time_s"], name="run_wall_time"),
    ]


def ranked_sort_indexes() -> list[models.Index]:
    """The ranked runs' scores in every order the ranking offers by a score figure, missing values last: the default
    (best pass@k first; 0019), pass@k ascending, and each other figure both ways followed by pass@k (the ranking's
    first tie-break), so a page reads its rows in order and sorts only runs equal on both."""
    ranked = models.Q(status="ranked")
    return [
        models.Index(models.F("pass_at_k").desc(nulls_last=True), name="run_score_ranked_pass_at_k", condition=ranked),
        models.Index(models.F("pass_at_k").asc(nulls_last=True), name="rs_ranked_pass_at_k_asc", condition=ranked),
        *[
            models.Index(
                getattr(models.F(column), direction)(nulls_last=True),
                models.F("pass_at_k").desc(nulls_last=True),
                name=f"rs_ranked_{name}_{direction}",
                condition=ranked,
            )
            for column, name in RANKED_SORT_FIGURES
            for direction in ("desc", "asc")
        ],
    ]


class AddIndexOnPostgres(migrations.AddIndex):
    """Adds an index to the models' state everywhere, and to the database on PostgreSQL only: SQLite (a local set-up's
    database, README) cannot build an index whose order says where missing values go ("unsupported use of NULLS
    LAST"), and its pages sort whatever they read without one."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
