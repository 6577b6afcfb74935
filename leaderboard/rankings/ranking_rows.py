"""A problem's ranking read from the rows its standing keeps (``StandingEntry``, written by
``services.problem_standing_refresh`` when a result is recorded): the problem page, its exports and the API page
through them in the database, so a request never ranks every evaluation of a problem. The rows are the ones
``rankings.solutions.rank_solutions`` computed; only each row's verification is read with the page, since
re-measurements are queued and settle outside the transaction that records a result (one query per page).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Hashable, Iterable, Iterator

from django.db.models import QuerySet

from evaluator.contract.profiles import PROFILES
from leaderboard.models import Problem, ProblemStanding, StandingEntry
from leaderboard.rankings import prepared, selectors, significance, solutions

STREAM_CHUNK_ROWS = 500  # rows an export converts per round trip (one query for their re-measurements)


def entry_values(entry: solutions.RankingEntry, workers: Iterable[str]) -> dict[str, Any]:
    """The stored columns of one ranking row (``workers``: the hosts that measured its evaluations)."""
    return {
        "rank": entry.rank,
        "rank_best": entry.rank_best,
        "rank_worst": entry.rank_worst,
        "username": entry.username,
        "user_id": entry.user_id,
        "submission_id": entry.submission_id,
        "submission_ids": list(entry.submission_ids),
        "workers": sorted(set(workers)),
        "speedup": entry.speedup,
        "speedup_ci_low": entry.speedup_ci_low,
        "speedup_ci_high": entry.speedup_ci_high,
        "baseline_median_us": entry.baseline_median_us,
        "solution_median_us": entry.solution_median_us,
        "roofline_fraction": entry.roofline_fraction,
        "submitted_at": entry.submitted_at,
        "model_run_id": entry.model_run_id,
        "model": entry.model,
        "protocol": entry.protocol,
        "evaluations": entry.evaluations,
        "source_key": entry.source_key,
        "estimator": entry.estimator,
        "protocol_revision": entry.protocol_revision,
        "problem_version": entry.problem_version,
        "timed": entry.timed,
        "who_key": (entry.model or entry.username).lower()[:200],
        "protocol_key": entry.protocol.lower() if entry.protocol else None,
    }


def problem_ranking_rows(
    *, problem: Problem, profile: str | None, version: int | None = None, revision: int | None | str = "default"
) -> QuerySet[StandingEntry]:
    """The stored rows of the ranking ``selectors.problem_ranking`` computes for the same arguments, in rank order
    (a queryset: sliced and counted by the database). ``revision`` "default": ``selectors.problem_ranking_default``
    of the stored standings (``selectors.stored_ranking_default``: one query more)."""
    if not profile or profile not in PROFILES:
        return StandingEntry.objects.none()
    if revision == "default":
        _, revision, _ = stored_ranking_default(problem=problem, profile=profile)
    version = problem.version if version is None else version
    return StandingEntry.objects.filter(
        standing__problem=problem,
        standing__profile=profile,
        standing__problem_version=version or 0,
        standing__protocol_revision=revision or 0,
    ).order_by("rank")


def stored_ranking_default(*, problem: Problem, profile: str) -> tuple[int, int | None, int]:
    """``selectors.problem_ranking_default`` of the problem on ``profile`` read from its stored standings of the current
    version (one query, a handful of rows, no evaluation read) and the number of rows of that ranking (0: none
    stored)."""
    rows = prepared.rows(
        ("problem-revisions", problem.pk, profile, problem.version),
        lambda: ProblemStanding.objects.filter(
            problem=problem, profile=profile, problem_version=problem.version
        ).values_list("protocol_revision", "passed", "solutions"),
    )
    # (a standing is kept only while some passed evaluation of its version and revision is)
    choices = [selectors.RankingChoice(problem.version, r or None, passed) for r, passed, _ in rows]
    version, revision = selectors.problem_ranking_default(problem=problem, choices=choices)
    return version, revision, next((n for r, _, n in rows if (r or None) == revision), 0)


def problem_default_ranking_rows(
    *, problem: Problem, profile: str | None
) -> tuple[QuerySet[StandingEntry], int, Hashable | None]:
    """``problem_ranking_rows`` of the ranking shown by default, its number of rows, as its standing keeps it (one
    query for both: the rows' own is run when they are read) and what they are read from (``ranking_key``)."""
    if not profile or profile not in PROFILES:
        return StandingEntry.objects.none(), 0, None
    version, revision, count = stored_ranking_default(problem=problem, profile=profile)
    key = ranking_key(problem=problem, profile=profile, version=version, revision=revision)
    return problem_ranking_rows(problem=problem, profile=profile, version=version, revision=revision), count, key


# What ``_entry`` reads of a stored row: a page of them is read as named tuples of these columns, not model instances.
ENTRY_FIELDS = (
    "rank",
    "rank_best",
    "rank_worst",
    "username",
    "user_id",
    "submission_id",
    "submission_ids",
    "workers",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "baseline_median_us",
    "solution_median_us",
    "roofline_fraction",
    "submitted_at",
    "model_run_id",
    "model",
    "protocol",
    "evaluations",
    "source_key",
    "estimator",
    "protocol_revision",
    "problem_version",
    "timed",
)


EntryRow = namedtuple("EntryRow", ENTRY_FIELDS)  # a stored row as ``values_list(*ENTRY_FIELDS, named=True)`` reads it


def ranking_key(*, problem: Problem, profile: str | None, version: int | None, revision: int | None) -> tuple:
    """Everything ``problem_ranking_rows`` builds its query from, for ``ranking_entries`` to compile a page of it once
    per process (``prepared``); the caller adds how it sorted the rows."""
    return ("problem-ranking", problem.pk, problem.version, profile, version, revision)


def ranking_entries(rows: Iterable[StandingEntry], key: Hashable | None = None) -> list[solutions.RankingEntry]:
    """``rows`` as the ranking's entries, each with its re-measurement's verdict as it stands (one query; a queryset
    of rows is read as the columns ``_entry`` reads, one query more). ``key``: everything a queryset of rows is built
    from but its slice (``ranking_key`` and how it is sorted): its query is then compiled once per process for
    each."""
    if isinstance(rows, QuerySet):
        rows = (
            list(map(EntryRow._make, prepared.rows_of(rows.values_list(*ENTRY_FIELDS), key)))
            if key is not None
            else list(rows.values_list(*ENTRY_FIELDS, named=True))
        )
    rows = list(rows)
    wanted = [sid for row in rows if row.timed for sid in row.submission_ids]
    checks: dict[int, list[dict[str, Any]]] = {}
    if wanted:
        for r in selectors.remeasures_of(tuple(wanted)):
            checks.setdefault(r["remeasure_of"], []).append(r)
    return [_entry(row, checks) for row in rows]


def ranking_entries_streamed(rows: QuerySet[StandingEntry]) -> Iterator[solutions.RankingEntry]:
    """``rows`` (already sorted and sliced) as entries, read and converted ``STREAM_CHUNK_ROWS`` at a time, for an
    export that never holds a whole ranking."""
    chunk: list[Any] = []
    for row in rows.values_list(*ENTRY_FIELDS, named=True).iterator(chunk_size=STREAM_CHUNK_ROWS):
        chunk.append(row)
        if len(chunk) == STREAM_CHUNK_ROWS:
            yield from ranking_entries(chunk)
            chunk = []
    yield from ranking_entries(chunk)


def _entry(row: Any, checks: dict[int, list[dict[str, Any]]]) -> solutions.RankingEntry:
    verification = None
    if row.timed:
        estimate = (
            significance.Estimate(row.speedup, row.speedup_ci_low, row.speedup_ci_high, row.evaluations)
            if row.speedup is not None
            else None
        )
        mine = sorted((r for sid in row.submission_ids for r in checks.get(sid, [])), key=lambda r: r["submission_id"])
        verification = solutions.verification_of(estimate, [{"worker": w} for w in row.workers], mine)
    return solutions.RankingEntry(
        rank=row.rank,
        username=row.username,
        user_id=row.user_id,
        submission_id=row.submission_id,
        speedup=row.speedup,
        speedup_ci_low=row.speedup_ci_low,
        speedup_ci_high=row.speedup_ci_high,
        baseline_median_us=row.baseline_median_us,
        solution_median_us=row.solution_median_us,
        roofline_fraction=row.roofline_fraction,
        submitted_at=row.submitted_at,
        model_run_id=row.model_run_id,
        model=row.model,
        protocol=row.protocol,
        evaluations=row.evaluations,
        source_key=row.source_key,
        estimator=row.estimator,
        protocol_revision=row.protocol_revision,
        problem_version=row.problem_version,
        rank_best=row.rank_best,
        rank_worst=row.rank_worst,
        timed=row.timed,
        verification=verification,
        submission_ids=tuple(row.submission_ids),
    )
