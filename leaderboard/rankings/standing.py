"""A model run's standing: whether it enters the overall ranking, or why not, and the rank range the intervals
allow it there.

- **Ranked** only when every attempt has a final verdict, it covers every problem of the suite version it names
  (manifest ``suite_version``; default: the suite's version at upload), that version is the current one and its
  timings are of the current protocol revision. The others are listed apart, never ranked: ``unfinished`` (an
  attempt has no final verdict yet), ``partial`` (it misses problems of its suite version), ``other-version``.
- **Rank range**: 1 + the runs significantly better (interval wholly above) .. N - the runs significantly worse,
  read from the interval of the sorted figure (pass@k for sorts without one; ``significance.rank_ranges``). A page
  reads them, and its counts, from the sorted ends stored at ingest per set of filters (``rank_ends``), never from
  every run.
"""

from __future__ import annotations

import bisect
import json
import sys
from array import array
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Protocol as Shape, Sequence

from django.db import connection
from django.db.models import Count, Q, QuerySet

from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from leaderboard.models import ModelRun
from leaderboard.rankings import metrics, significance
from leaderboard.stored_models import RankingEnds
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
    lows: Sequence[float]
    highs: Sequence[float]


# A run's values of the filters a stored set of them may fix, in this order (``rank_ends``, ``RankingEnds``): the
# ranking's filters (``filters.RunFilterSet``) and the API's owner.
FILTERS = ("profile", "precision", "mode", "k", "published", "user")


def filters_key(values: Sequence[str]) -> str:
    """The stored key of one set of filters (``RankingEnds.filters``): each of ``FILTERS``' values as the filters
    apply it, "" where unset."""
    return json.dumps(list(values), separators=(",", ":"))


def run_filter_values(
    *, profile: str, precision: str, mode: str, k: Any, published: bool, user_id: int | None
) -> tuple[str, ...]:
    """A run's value of each of ``FILTERS`` (or the values a set of filters fixes), as a filter set to it holds it:
    "" where unset, or where no filter can pick a run by it (no precision)."""
    return (
        profile or "",
        precision or "",
        mode or "",
        str(k) if k else "",
        "1" if published else "",
        str(user_id) if user_id is not None else "",
    )


def read_floats(data: bytes | memoryview | None) -> array[float]:
    """Stored ends (``RankingEnds``: little-endian doubles) as a sequence of floats, read without parsing a number (a
    page bisects them for its own rows only)."""
    ends = array("d")
    ends.frombytes(data or b"")
    if sys.byteorder == "big":
        ends.byteswap()
    return ends


def filter_values(filters: Any = None, user: Any = None) -> tuple[str, ...]:
    """The set of filters a ranking is read with (``rank_ends.FILTERS``): the valid values of ``filters`` (a
    ``RunFilterSet``; None: none), as its ``.qs`` applies them, and ``user`` (the API's owner; None: anyone)."""
    state = dict(filters.state()) if filters is not None else {}
    return run_filter_values(
        profile=state.get("profile") or "",
        precision=state.get("precision") or "",
        mode=state.get("mode") or "",
        k=state.get("k") or None,
        published=bool(state.get("published")),
        user_id=user.pk if user is not None else None,
    )


@lru_cache
def _stored_sql(figure: str) -> str:
    table = RankingEnds._meta.db_table
    return f"SELECT runs, ranked, {figure}_lows, {figure}_highs FROM {table} WHERE filters = %s"


def _stored(values: tuple[str, ...], sort: str | None) -> tuple[int, int, RankEnds]:
    """How many runs the set of filters ``values`` keeps, how many of them are ranked, and the ends their rank ranges
    are read from for ``sort``, as stored at ingest (``RankingEnds``): one query of one row, whatever the number of
    runs (no row: the filters keep no run)."""
    figure = rank_metric(sort)
    low, high = RANK_INTERVALS[figure]
    with connection.cursor() as cursor:
        cursor.execute(_stored_sql(figure), [filters_key(values)])
        row = cursor.fetchone()
    if row is None:
        return 0, 0, RankEnds(low, high, [], [])
    runs, ranked, lows, highs = row
    return runs, ranked, RankEnds(low, high, read_floats(lows), read_floats(highs))


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


def ranked_count_and_ends(*, filters: Any = None, user: Any = None, sort: str | None = None) -> tuple[int, RankEnds]:
    """How many ranked runs ``filters`` (a ``RunFilterSet``; None: none) and ``user`` (their owner; None: anyone)
    keep, as ``model_run_ranking(..., standing=RANKED)`` lists them, and the ends their rank ranges are read from
    (``set_rank_ranges``): one stored row (``_stored``), so a page of them needs no count of its own."""
    _, ranked, ends = _stored(filter_values(filters, user), sort)
    return ranked, ends


def model_run_standing_counts(*, runs: QuerySet[ModelRun]) -> tuple[int, int]:
    """How many of ``runs`` (filtered, any standing) are ranked and how many listed apart, counted over the runs (one
    query; the pages read the counts stored at ingest: ``model_run_page_standing``)."""
    counts = runs.order_by().aggregate(total=Count("pk"), ranked=Count("pk", filter=Q(score__status=RANKED)))
    return counts["ranked"], counts["total"] - counts["ranked"]


def model_run_page_standing(*, filters: Any = None, sort: str | None = None) -> tuple[int, int, RankEnds]:
    """What a page of the ranking reads of every run ``filters`` keeps (a ``RunFilterSet``; None: none), any
    standing: how many are ranked and how many listed apart (``model_run_standing_counts``) and the ends the ranked
    ones' rank ranges are read from for ``sort`` (``set_rank_ranges``), as stored at ingest: one query of one row,
    whatever the number of runs."""
    runs, ranked, ends = _stored(filter_values(filters), sort)
    return ranked, runs - ranked, ends
