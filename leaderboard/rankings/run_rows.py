"""A page of model runs read as plain rows (``.values()``) instead of model instances.

A ranking page, its exports, the API's ranking and a user's page read a run, its owner's name and its stored score:
building three model instances a row (the run, its RunScore and its owner) cost a page of 100 runs about a quarter of
its CPU. ``RunRow`` carries the same attributes those tables, serializers and rows of HTML read (``pk``, the run's
columns, ``user.username``, ``score.<field>``, ``is_done``), with the same values
(``tests/leaderboard/rankings/test_run_rows.py`` holds them to the model instances).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Hashable, Iterable

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet

from evaluator.contract import states
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import prepared

# The run's own columns a table of runs reads (its manifest and notes, big and never shown, are left out).
RUN_FIELDS = (
    "id",
    "user_id",
    "model",
    "provider",
    "mode",
    "k",
    "turn_budget",
    "tokens",
    "wall_time_s",
    "protocol_label",
    "profile",
    "precision",
    "suite",
    "suite_version",
    "run_date",
    "open_weights",
    "archive_name",
    "archive_sha256",
    "is_demo",
    "published_at",
    "state",
    "attempts_total",
    "attempts_done",
    "created_at",
    "finished_at",
    "score_stale_since",
)
# The stored score's columns (its per-category breakdown and whole detail, big JSON, are left out).
SCORE_FIELDS = (
    "k",
    "pass_at_1",
    "pass_at_k",
    "fast_1_at_k",
    "fast_1_5_at_k",
    "fast_2_at_k",
    "geomean_speedup",
    "mean_roofline_fraction",
    "problems_scored",
    "problems_not_scorable",
    "problems_not_attempted",
    "coverage",
    "correct_attempts",
    "pass_at_k_low",
    "pass_at_k_high",
    "fast_1_low",
    "fast_1_high",
    "fast_1_5_low",
    "fast_1_5_high",
    "fast_2_low",
    "fast_2_high",
    "geomean_low",
    "geomean_high",
    "status",
    "timed",
    "protocol_revision",
    "updated_at",
)
# What the pages' rows of runs show (``web/row_html.py``) and their rank ranges read: the dates, archive and counts
# only exports and the API write are left out (fewer columns to read, five dates fewer to parse a row).
SHOWN_RUN_FIELDS = tuple(
    name
    for name in RUN_FIELDS
    if name not in ("run_date", "archive_name", "archive_sha256", "published_at", "finished_at", "score_stale_since")
)
SHOWN_SCORE_FIELDS = tuple(
    name
    for name in SCORE_FIELDS
    if name
    not in ("problems_scored", "problems_not_scorable", "problems_not_attempted", "correct_attempts", "updated_at")
)

# What a table of runs exports (``run_tables.RUN_COLUMNS`` and ``_run_extra``: the ranking's and a user's CSV and JSON):
# the archive and the dates but the upload's are left out (the API's records, ``run_rows``, write them).
EXPORTED_RUN_FIELDS = tuple(
    name
    for name in RUN_FIELDS
    if name not in ("run_date", "archive_name", "archive_sha256", "published_at", "finished_at", "score_stale_since")
)
EXPORTED_SCORE_FIELDS = tuple(name for name in SCORE_FIELDS if name not in ("correct_attempts", "updated_at"))


class _Columns:
    """The columns a page of runs is read with, and where the owner's name and the score's columns are among them."""

    def __init__(self, tag: str, run_fields: tuple[str, ...], score_fields: tuple[str, ...]) -> None:
        assert run_fields[:2] == ("id", "user_id") and score_fields[0] == "k"
        self.tag = tag
        self.run_fields, self.score_fields = run_fields, score_fields
        self.names = (*run_fields, "user__username", *(f"score__{name}" for name in score_fields))
        self.owner, self.score = len(run_fields), len(run_fields) + 1


_ALL = _Columns("all", RUN_FIELDS, SCORE_FIELDS)
_SHOWN = _Columns("shown", SHOWN_RUN_FIELDS, SHOWN_SCORE_FIELDS)
_EXPORTED = _Columns("exported", EXPORTED_RUN_FIELDS, EXPORTED_SCORE_FIELDS)


class Owner:
    """A run's owner as the tables read it: the name."""

    __slots__ = ("pk", "id", "username")

    def __init__(self, pk: int, username: str) -> None:
        self.pk = self.id = pk
        self.username = username

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


class Score:
    """A run's stored score (``RunScore``'s columns but the big JSON ones)."""

    def __init__(self, model_run_id: int, values: dict[str, Any]) -> None:
        self.model_run_id = self.pk = model_run_id
        self.__dict__.update(values)


class RunRow:
    """One model run of a table: its columns as attributes, ``user``, ``score`` (None when it has no RunScore row),
    ``pk`` and ``is_done``, as a ``ModelRun`` with its score and owner gives them; ``read``: the row as read (which
    columns, their values), everything the row's attributes come from: what a memo of a row's HTML or exported record
    keys on (``rankings/memo.py``)."""

    score: Score | None
    rank_range: tuple[int, int] | None

    def __init__(self, values: tuple[Any, ...], columns: _Columns = _ALL) -> None:
        """``values``: the row of ``columns.names``, in that order."""
        mine = self.__dict__
        mine.update(zip(columns.run_fields, values))
        self.read = (columns.tag, values)
        self.pk = mine["id"]
        self.user = Owner(mine["user_id"], values[columns.owner])
        at = columns.score
        self.score = (
            Score(self.pk, dict(zip(columns.score_fields, values[at:])))
            if values[at] is not None  # k, the first, is never null in a stored score: none was joined
            else None
        )

    @property
    def is_done(self) -> bool:
        return states.is_done(self.state)

    def __str__(self) -> str:
        return f"run #{self.pk}: {self.model} ({self.mode}, k={self.k}) on {self.profile}"


@lru_cache
def _page_sql(columns: _Columns) -> str:
    """The query that reads ``columns`` of the runs a query of their ids (``{ids}``) lists, in its order: the run,
    its owner's name and its score (none: nulls), as ``values_list(*columns.names)`` reads them, written out once per
    process (PostgreSQL)."""
    run, score = ModelRun._meta, RunScore._meta
    user = run.get_field("user")
    owner = user.related_model._meta  # type: ignore[union-attr]
    q = connection.ops.quote_name
    names = [
        *(f"r.{q(run.get_field(name).column)}" for name in columns.run_fields),
        f"u.{q(owner.get_field('username').column)}",
        *(f"s.{q(score.get_field(name).column)}" for name in columns.score_fields),
    ]
    return (
        f"SELECT {', '.join(names)} FROM unnest(ARRAY({{ids}})) WITH ORDINALITY AS page (id, n) "
        f"JOIN {q(run.db_table)} r ON r.{q(run.pk.column)} = page.id "
        f"JOIN {q(owner.db_table)} u ON u.{q(owner.pk.column)} = r.{q(user.column)} "
        f"LEFT JOIN {q(score.db_table)} s ON s.{q(score.pk.column)} = r.{q(run.pk.column)} "
        "ORDER BY page.n"
    )


def _read(runs: QuerySet[ModelRun], columns: _Columns, key: Hashable | None = None) -> list[RunRow]:
    """``runs`` (filtered, sorted, sliced) read as ``RunRow``s of ``columns``, in one query. On PostgreSQL only the
    query of their ids is compiled per request, the columns' part written once (``_page_sql``): compiling some forty
    columns through two joins cost a page of runs more CPU than reading them. ``key``: everything ``runs`` is built
    from but its slice (``run_selectors.ranking_key``): the query of their ids is then compiled once per process for
    each (``prepared``)."""
    if connection.vendor != "postgresql":
        return [RunRow(values, columns) for values in runs.values_list(*columns.names)]
    try:
        ids, params = prepared.sql_with_params(runs.values_list("pk"), ("ids", key) if key is not None else None)
    except EmptyResultSet:  # a filter that can match nothing
        return []
    with connection.cursor() as cursor:
        cursor.execute(_page_sql(columns).format(ids=ids), params)
        return [RunRow(values, columns) for values in cursor.fetchall()]


def run_rows(runs: QuerySet[ModelRun] | Iterable[Any], key: Hashable | None = None) -> list[Any]:
    """The runs of ``runs`` (a queryset, sliced or not, in its order) as ``RunRow``s with every column an export or
    the API writes, in one query; anything else (rows already read) as it is. ``key``: as ``_read`` takes it."""
    if not isinstance(runs, QuerySet):
        return list(runs)
    return _read(runs, _ALL, key)


def shown_run_rows(runs: QuerySet[ModelRun] | Iterable[Any], key: Hashable | None = None) -> list[Any]:
    """The same with only what a page's rows of runs show (``SHOWN_RUN_FIELDS``, ``SHOWN_SCORE_FIELDS``)."""
    if not isinstance(runs, QuerySet):
        return list(runs)
    return _read(runs, _SHOWN, key)


def exported_run_rows(runs: QuerySet[ModelRun] | Iterable[Any], key: Hashable | None = None) -> list[Any]:
    """The same with only what a table of runs exports (``EXPORTED_RUN_FIELDS``, ``EXPORTED_SCORE_FIELDS``): five
    dates fewer to parse a row."""
    if not isinstance(runs, QuerySet):
        return list(runs)
    return _read(runs, _EXPORTED, key)
