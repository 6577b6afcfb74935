"""The overall ranking's standings as data (``RankingEnds``): for every set of its filters that some run belongs to,
how many runs it keeps, how many of them are ranked, and the sorted ends of the ranked runs' intervals per figure.
A page of the ranking reads one row of them (``standing``) instead of aggregating every run's interval on every
request (its PostgreSQL cost grew with the number of runs: 1.0 ms at 100 runs, 6.3 ms at 1,000).

A run belongs to the sets of filters that leave each filter unset or set to the run's own value (hardware, precision,
protocol, k, published; and for the API, its owner): at most 2^6 = 64 sets. When a run or its score is saved or
deleted (``apps.py`` connects the signals, whichever way it is written: the scoring job, publishing, the admin, a
user's deletion cascading to their runs) the rows of the sets it belonged to and belongs to now are recomputed from
the runs as they stand, inside the writer's transaction, so writing twice changes nothing; bulk writes are followed
by ``rebuild_standings`` (``rank_ends_rebuild``), which recomputes every row the same way (a test holds the two
equal).
"""

from __future__ import annotations

import math
import sys
from array import array
from itertools import product
from typing import Any, Iterable, Sequence

from django.db import connection, transaction

from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings.standing import RANK_INTERVALS, RANKED, filters_key, run_filter_values
from leaderboard.stored_models import RANK_FIGURES, RankingEnds

# The score's interval columns per figure, as ``standing.RANK_INTERVALS`` names them.
INTERVAL_COLUMNS = {
    figure: (low.removeprefix("score__"), high.removeprefix("score__"))
    for figure, (low, high) in RANK_INTERVALS.items()
}
assert tuple(INTERVAL_COLUMNS) == RANK_FIGURES
# What is read of every run: its filters' values, then its score's standing and interval ends (null: no score).
_RUN_COLUMNS = ("profile", "precision", "mode", "k", "published_at", "user_id")
_SCORE_COLUMNS = ("score__status", *(f"score__{c}" for pair in INTERVAL_COLUMNS.values() for c in pair))
RUN_COLUMNS = (*_RUN_COLUMNS, *_SCORE_COLUMNS)  # every run read as ``ends_rows`` takes it
# The filters a run's save changes (another save, its progress, changes none of its sets).
_FILTER_FIELDS = {"profile", "precision", "mode", "k", "published_at", "user", "user_id"}


def sets_of(values: Sequence[str]) -> set[tuple[str, ...]]:
    """Every set of filters that keeps a run with ``values`` (``standing.run_filter_values``: each filter unset or set
    to the run's value)."""
    return set(product(*(("", v) if v else ("",) for v in values)))


def _sort_key(value: float) -> tuple[bool, float]:
    return (math.isnan(value), value)  # as PostgreSQL orders floats: NaN above every other value


def _write(values: Iterable[float]) -> bytes:
    """Ends sorted as PostgreSQL sorts them, as little-endian doubles (``standing.read_floats`` reads them back)."""
    ends = sorted(values)
    if any(map(math.isnan, ends)):  # (Python's sort leaves NaN where it was)
        ends.sort(key=_sort_key)
    packed = array("d", ends)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _tally(rows: Iterable[Sequence[Any]], wanted: set[tuple[str, ...]] | None) -> dict[tuple[str, ...], list[Any]]:
    """Per set of filters (only ``wanted``'s; None: every set some run belongs to): [runs, ranked, per figure its lows
    and highs], from rows of ``RUN_COLUMNS``."""
    by_values: dict[tuple[str, ...], list[Any]] = {}
    for row in rows:
        values = _stored_values(row[:6])
        status, ends = row[6], row[7:]
        tally = by_values.setdefault(values, [0, 0, *([] for _ in range(2 * len(RANK_FIGURES)))])
        tally[0] += 1
        if status == RANKED:
            tally[1] += 1
            for i in range(len(RANK_FIGURES)):
                low, high = ends[2 * i], ends[2 * i + 1]
                if low is not None and high is not None:
                    tally[2 + 2 * i].append(low)
                    tally[3 + 2 * i].append(high)
    sets: dict[tuple[str, ...], list[Any]] = {}
    for values, tally in by_values.items():
        for kept in sets_of(values):
            if wanted is not None and kept not in wanted:
                continue
            into = sets.setdefault(kept, [0, 0, *([] for _ in range(2 * len(RANK_FIGURES)))])
            into[0] += tally[0]
            into[1] += tally[1]
            for i in range(2, len(into)):
                into[i].extend(tally[i])
    return sets


def ends_rows(rows: Iterable[Sequence[Any]], wanted: set[tuple[str, ...]] | None = None) -> list[dict[str, Any]]:
    """The ``RankingEnds`` rows (as field values) of ``wanted``'s sets of filters (None: every set some run belongs
    to) that keep some run, computed from every run's row (``RUN_COLUMNS``)."""
    out = []
    for kept, tally in _tally(rows, wanted).items():
        record = {"filters": filters_key(kept), "runs": tally[0], "ranked": tally[1]}
        for i, figure in enumerate(RANK_FIGURES):
            record[f"{figure}_lows"] = _write(tally[2 + 2 * i])
            record[f"{figure}_highs"] = _write(tally[3 + 2 * i])
        out.append(record)
    return out


def _runs_read() -> Iterable[Sequence[Any]]:
    rows: Iterable[Sequence[Any]] = ModelRun.objects.order_by().values_list(*RUN_COLUMNS).iterator(chunk_size=5000)
    return rows


def _store(records: list[dict[str, Any]], sets: set[tuple[str, ...]] | None) -> None:
    """Writes ``records`` and removes the rows of ``sets`` (None: every row) that keep no run any more."""
    kept = {r["filters"] for r in records}
    gone = (
        RankingEnds.objects.all()
        if sets is None
        else RankingEnds.objects.filter(filters__in=[filters_key(s) for s in sets])
    )
    gone.exclude(filters__in=kept).delete()
    fields = [f.name for f in RankingEnds._meta.concrete_fields if f.name not in ("id", "filters")]
    RankingEnds.objects.bulk_create(
        [RankingEnds(**r) for r in records], update_conflicts=True, unique_fields=["filters"], update_fields=fields
    )


# One writer of the stored rows at a time (PostgreSQL: a transaction-scoped advisory lock, released when the writer's
# transaction ends). Each writer recomputes its sets from the runs as committed once it holds the lock (under READ
# COMMITTED each statement sees what the previous holder committed), so two runs scored or published at once cannot
# each write rows that miss the other's change. Every writer takes its own run's row lock before this one and no
# other run's after it (SQLite serializes writers itself).
_WRITER_LOCK = 0x52414E4B  # "RANK"


def _one_writer() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_WRITER_LOCK])


def rank_ends_refresh(*, sets: set[tuple[str, ...]]) -> None:
    """Recomputes the rows of ``sets`` (sets of filters, ``sets_of``) from the runs as they stand, one writer at a
    time (``_one_writer``; four queries: the lock, the runs, the rows, those that keep no run any more): idempotent."""
    if not sets:
        return
    with transaction.atomic():
        _one_writer()
        _store(ends_rows(_runs_read(), sets), sets)


def _values_of_run(run: ModelRun) -> tuple[str, ...]:
    return run_filter_values(
        profile=run.profile,
        precision=run.precision,
        mode=run.mode,
        k=run.k,
        published=run.published_at is not None,
        user_id=run.user_id,
    )


def _stored_values(stored: Sequence[Any]) -> tuple[str, ...]:
    """``run_filter_values`` of a run read as ``_RUN_COLUMNS``."""
    profile, precision, mode, k, published_at, user_id = stored
    return run_filter_values(
        profile=profile, precision=precision, mode=mode, k=k, published=published_at is not None, user_id=user_id
    )


def rank_ends_after_run_saved(*, run: ModelRun, created: bool, update_fields: Any = None) -> None:
    """Called when a run is saved (inside the caller's transaction): a new run, or one whose filters' values may have
    changed, changes the rows of the sets it belongs to, and of those it belonged to (read before the save:
    ``rank_ends_before_run_saved``); saving its progress changes none."""
    if not created and update_fields is not None and not _FILTER_FIELDS.intersection(update_fields):
        return
    before = getattr(run, "_rank_ends_before", None)
    sets = sets_of(_values_of_run(run))
    if before is not None:
        sets |= sets_of(before)
    rank_ends_refresh(sets=sets)


def rank_ends_before_run_saved(*, run: ModelRun, update_fields: Any = None) -> None:
    """Called before a run is saved: notes the filters' values it is stored under now, when they may change."""
    run._rank_ends_before = None
    if run.pk is None or (update_fields is not None and not _FILTER_FIELDS.intersection(update_fields)):
        return
    stored = ModelRun.objects.filter(pk=run.pk).values_list(*_RUN_COLUMNS).first()
    if stored is not None:
        run._rank_ends_before = _stored_values(stored)


def rank_ends_after_run_deleted(*, run: ModelRun) -> None:
    """Called when a run is deleted: the sets it belonged to keep one run fewer."""
    rank_ends_refresh(sets=sets_of(_values_of_run(run)))


_SCORE_FIELDS = tuple(name.removeprefix("score__") for name in _SCORE_COLUMNS)  # status, then the ends


def _part(status: str | None, ends: Sequence[Any]) -> tuple[Any, ...] | None:
    """What a run's score adds to the rows of its sets besides the run itself: its ends when it is ranked, else
    nothing (a run without a score counts the same as one not ranked)."""
    return tuple(ends) if status == RANKED else None


def _part_of(score: RunScore) -> tuple[Any, ...] | None:
    return _part(score.status, [getattr(score, name) for name in _SCORE_FIELDS[1:]])


def rank_ends_before_score_saved(*, score: RunScore) -> None:
    """Called before a run's score is saved: notes what the stored score adds to the rows now (one query)."""
    stored = RunScore.objects.filter(pk=score.model_run_id).values_list(*_SCORE_FIELDS).first()
    score._rank_ends_before = _part(stored[0], stored[1:]) if stored is not None else None


def rank_ends_after_score_changed(*, score: RunScore, deleted: bool = False) -> None:
    """Called when a run's score is saved or deleted: the sets the run belongs to, when what the score adds to them
    changed (it was or is ranked, with other ends). While a run is evaluated its score is saved once per batch of
    results and stays unranked: nothing to recompute."""
    before = _part_of(score) if deleted else getattr(score, "_rank_ends_before", None)
    after = None if deleted else _part_of(score)
    if before == after and (deleted or hasattr(score, "_rank_ends_before")):
        return
    stored = ModelRun.objects.filter(pk=score.model_run_id).values_list(*_RUN_COLUMNS).first()
    if stored is not None:  # (a score deleted with its run: the run's deletion recomputes them)
        rank_ends_refresh(sets=sets_of(_stored_values(stored)))


def rank_ends_rebuild() -> int:
    """Every row recomputed from the runs (``rebuild_standings``). Returns how many sets of filters keep a run."""
    with transaction.atomic():
        _one_writer()
        records = ends_rows(_runs_read())
        _store(records, None)
    return len(records)
