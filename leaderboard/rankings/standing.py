"""A model run's standing: whether it enters the overall ranking, or why not, and the rank range the intervals
allow it there.

- **Ranked** only when every attempt has a final verdict, it covers every problem of the suite version it names
  (manifest ``suite_version``; default: the suite's version at upload), that version is the current one and its
  timings are of the current protocol revision. The others are listed apart, never ranked: ``unfinished`` (an
  attempt has no final verdict yet), ``partial`` (it misses problems of its suite version), ``other-version``.
- **Rank range**: 1 + the runs significantly better (interval wholly above) .. N - the runs significantly worse,
  read from the interval of the sorted figure (pass@k for sorts without one; ``significance.rank_ranges``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Protocol as Shape

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, Q, QuerySet

from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import metrics, prepared, significance
from problems.registry import SUITE_VERSION

# Whether a run enters the overall ranking, and if not why (RunScore.status).
RANKED = "ranked"
UNFINISHED = "unfinished"  # some attempt has no final verdict yet
PARTIAL = "partial"  # every attempt settled, but it misses problems of the suite version it names
OTHER_VERSION = "other-version"  # it answered another version of its suite, or was timed under another revision
RUN_STATUSES = (RANKED, UNFINISHED, PARTIAL, OTHER_VERSION)
# Which list of runs a ranking read asks for: the ranked ones (RANKED), the others (UNRANKED), or both.
UNRANKED, ALL = "unranked", "all"


def run_status(
    *,
    attempts_total: int,
    attempts_final: int,
    not_attempted: int,
    suite_version_current: bool,
    revision_current: bool = True,
) -> str:
    """A run's place in the overall ranking: RANKED only when every attempt has a final verdict, it covers every
    problem of its suite version (``not_attempted`` 0), that version is current and its timings are of the current
    protocol revision."""
    if attempts_total == 0 or attempts_final < attempts_total:
        return UNFINISHED
    if not suite_version_current or not revision_current:
        return OTHER_VERSION
    if not_attempted:
        return PARTIAL
    return RANKED


def current_suite_version(suite: str) -> str | None:
    """The version of a problem suite runs are ranked on: the built-in suite's ``SUITE_VERSION``; None for a suite
    that names no version (then every run of it counts as current)."""
    return SUITE_VERSION if suite == "arena" else None


def run_suite_version_current(run: ModelRun) -> bool:
    current = current_suite_version(run.suite)
    return current is None or not run.suite_version or run.suite_version == current


class _Attempt(Shape):
    """What the standing reads of an attempt (``run_selectors.AttemptRow``)."""

    is_final: bool
    speedup: float | None
    protocol_revision: int | None


def model_run_status(*, run: ModelRun, attempts: Iterable[_Attempt], score: metrics.RunScore) -> str:
    """Whether the run enters the overall ranking, or why not (``run_status``)."""
    attempts = list(attempts)
    revisions = {a.protocol_revision for a in attempts if a.is_final and a.speedup is not None}
    timed = metrics.measures_speed(run.profile)
    revision_current = (
        not timed
        or not revisions
        or revisions <= {TIMING_PROTOCOL_REVISION, None}
        and (TIMING_PROTOCOL_REVISION in revisions or revisions == {None})
    )
    return run_status(
        attempts_total=len(attempts),
        attempts_final=sum(1 for a in attempts if a.is_final),
        not_attempted=len(score.not_attempted),
        suite_version_current=run_suite_version_current(run),
        revision_current=revision_current,
    )


# The interval a rank range is read from, per sort key (descending: best first); other sorts rank by pass@k.
RANK_INTERVALS = {
    "pass_at_k": ("score__pass_at_k_low", "score__pass_at_k_high"),
    "fast_1": ("score__fast_1_low", "score__fast_1_high"),
    "fast_1_5": ("score__fast_1_5_low", "score__fast_1_5_high"),
    "fast_2": ("score__fast_2_low", "score__fast_2_high"),
    "speedup": ("score__geomean_low", "score__geomean_high"),
}


def rank_metric(sort: str | None) -> str:
    """The figure ranks are read from: the sort column when it has intervals, else pass@k."""
    key = (sort or "").lstrip("-")
    return key if key in RANK_INTERVALS else "pass_at_k"


def model_run_rank_ranges(*, runs: QuerySet[ModelRun], sort: str | None = None) -> dict[int, tuple[int, int]]:
    """Each ranked run's rank range among ``runs`` (a ranking already filtered to ranked runs): 1 + the number of
    runs significantly better (interval wholly above) .. N - the number significantly worse (one query)."""
    low, high = RANK_INTERVALS[rank_metric(sort)]
    rows = list(runs.order_by().values_list("pk", low, high))
    intervals = [significance.Interval(lo, hi) if lo is not None and hi is not None else None for _, lo, hi in rows]
    return {pk: span for (pk, _, _), span in zip(rows, significance.rank_ranges(intervals)) if span is not None}


@dataclass(frozen=True)
class RankEnds:
    """The sorted lower and upper ends of every ranked interval of one figure (the score's columns ``low`` and
    ``high``): what a page's rank ranges are read from."""

    low: str
    high: str
    lows: list[float]
    highs: list[float]


def _ends_fields(sort: str | None) -> tuple[str, str]:
    return RANK_INTERVALS[rank_metric(sort)]


def _rank_ends(runs: QuerySet[ModelRun], sort: str | None, key: Hashable | None = None) -> RankEnds:
    low, high = _ends_fields(sort)
    if connection.vendor == "postgresql":
        _, _, lows, highs = _counts_and_ends(runs, low, high, ranked_only=False, key=key)
        return RankEnds(low, high, lows, highs)
    pairs = list(runs.order_by().filter(**{f"{low}__isnull": False, f"{high}__isnull": False}).values_list(low, high))
    return RankEnds(low, high, sorted(p[0] for p in pairs), sorted(p[1] for p in pairs))


def _counts_and_ends(
    runs: QuerySet[ModelRun], low: str, high: str, *, ranked_only: bool, key: Hashable | None = None
) -> tuple[int, int, list[float], list[float]]:
    """On PostgreSQL, in one query over ``runs``: how many there are, how many are ranked, and the sorted ``low`` and
    ``high`` ends (score columns) of those with both (``ranked_only``: of the ranked ones only). Written out rather
    than as Django aggregates: compiling two ordered, filtered ArrayAggs cost about as much CPU as the rest of a
    ranking page's queries together. The columns come from RANK_INTERVALS, never from the request. ``key``:
    everything ``runs`` is built from, so that their filters are compiled once per process (``prepared``)."""
    try:  # the runs' filters, as the ranking's own query applies them (compiled without its joins and columns)
        inner, inner_params = prepared.sql_with_params(
            runs.order_by().values("pk"), ("filtered", key) if key is not None else None
        )
    except EmptyResultSet:  # a filter that can match nothing
        return 0, 0, [], []
    score = RunScore._meta
    lo, hi = (score.get_field(name.removeprefix("score__")).column for name in (low, high))
    present = f"s.{lo} IS NOT NULL AND s.{hi} IS NOT NULL" + (" AND s.status = %s" if ranked_only else "")
    sql = (
        f"SELECT count(*), count(*) FILTER (WHERE s.status = %s), "
        f"array_agg(s.{lo} ORDER BY s.{lo}) FILTER (WHERE {present}), "
        f"array_agg(s.{hi} ORDER BY s.{hi}) FILTER (WHERE {present}) "
        f"FROM {ModelRun._meta.db_table} r LEFT JOIN {score.db_table} s ON s.{score.pk.column} = r.id "
        f"WHERE r.id IN ({inner})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [RANKED, *([RANKED, RANKED] if ranked_only else []), *inner_params])
        total, ranked, lows, highs = cursor.fetchone()
    return total, ranked, lows or [], highs or []


def set_rank_ranges(*, rows: Iterable[Any], ends: RankEnds) -> None:
    """Set ``rank_range`` on each of ``rows`` (runs read with their scores: ``RunRow``s or model runs) from the
    sorted ends of the ranked intervals: the ranges ``model_run_rank_ranges`` gives them (no query)."""
    n = len(ends.lows)
    lows, highs = ends.lows, ends.highs
    row_low, row_high = ends.low.removeprefix("score__"), ends.high.removeprefix("score__")
    for row in rows:
        score = getattr(row, "score", None)
        lo, hi = getattr(score, row_low, None), getattr(score, row_high, None)
        if n and lo is not None and hi is not None:
            better = n - bisect.bisect_right(lows, hi)  # others' low above my high
            worse = bisect.bisect_left(highs, lo)  # others' high below my low
            row.rank_range = (1 + better, n - worse)
        else:
            row.rank_range = None


def page_rank_ranges(
    *, runs: QuerySet[ModelRun], rows: Iterable[Any], sort: str | None = None, key: Hashable | None = None
) -> None:
    """Set ``rank_range`` on each of ``rows`` (a page of ``runs``, read with their scores: ``RunRow``s or model
    runs): the same ranges as ``model_run_rank_ranges`` gives them, from the sorted ends of every ranked interval
    (one query: on PostgreSQL two sorted arrays of floats, one row, instead of a row per run). ``key``: everything
    ``runs`` is built from (``run_selectors.ranking_key``), so that its query is compiled once per process."""
    set_rank_ranges(rows=rows, ends=_rank_ends(runs, sort, key))


def ranked_count_and_ends(
    *, runs: QuerySet[ModelRun], sort: str | None = None, key: Hashable | None = None
) -> tuple[int, RankEnds]:
    """How many ``runs`` there are (the ranked ones, as ``model_run_ranking`` lists them for the ranking) and the
    ends their rank ranges are read from (``page_rank_ranges``): on PostgreSQL both in the one query of the ends, so a
    page of them needs no count of its own. ``key``: as ``page_rank_ranges`` takes it."""
    low, high = _ends_fields(sort)
    if connection.vendor != "postgresql":
        return runs.count(), _rank_ends(runs, sort)
    total, _, lows, highs = _counts_and_ends(runs, low, high, ranked_only=False, key=key)
    return total, RankEnds(low, high, lows, highs)


def model_run_standing_counts(*, runs: QuerySet[ModelRun]) -> tuple[int, int]:
    """How many of ``runs`` (filtered, any standing) are ranked and how many listed apart: one query for both
    tables' pagers."""
    counts = runs.order_by().aggregate(total=Count("pk"), ranked=Count("pk", filter=Q(score__status=RANKED)))
    return counts["ranked"], counts["total"] - counts["ranked"]


def model_run_page_standing(
    *, runs: QuerySet[ModelRun], sort: str | None = None, key: Hashable | None = None
) -> tuple[int, int, RankEnds]:
    """What a page of the ranking reads of every run of ``runs`` (filtered, any standing) in one query: how many
    are ranked and how many listed apart (``model_run_standing_counts``) and the ends the ranked ones' rank ranges
    are read from (``page_rank_ranges`` over them, for ``sort``). ``key``: everything ``runs`` is built from
    (``run_selectors.ranking_key``), so that its query is compiled once per process."""
    if connection.vendor != "postgresql":
        ranked, unranked = model_run_standing_counts(runs=runs)
        return ranked, unranked, _rank_ends(runs.filter(score__status=RANKED), sort)
    low, high = _ends_fields(sort)
    total, ranked, lows, highs = _counts_and_ends(runs, low, high, ranked_only=True, key=key)
    return ranked, total - ranked, RankEnds(low, high, lows, highs)
