"""The writes of what a problem page and the ranking of runs read instead of computing per request, besides the
standings (``services``): a problem version's measured roofline and baseline on a profile (``MeasuredRoofline``,
``MeasuredBaseline``), kept when a result is recorded, and the values the runs' filters offer (``RunFilterChoice``),
kept when a run is saved or deleted; each with the rebuild ``services.standings_rebuild`` calls. Recording the same
result or saving the same run twice changes nothing."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef

from leaderboard.models import MeasuredBaseline, MeasuredRoofline, ModelRun, Result, RunFilterChoice
from leaderboard.rankings import selectors

# --- a problem page's measured roofline ------------------------------------------------------------------

# Of an evaluation's document, what a problem page shows where the site cannot compute the roofline itself: the
# newest evaluation of the problem's version on the profile whose document has ``roofline.time_us`` (any verdict;
# re-measurements too). Ties of time go to the later submission.
_ROOFLINE_UPSERT = """
INSERT INTO leaderboard_measuredroofline
    (problem_id, profile, problem_version, time_us, bound, recorded_at, submission_id)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (problem_id, profile, problem_version) DO UPDATE SET
    time_us = excluded.time_us, bound = excluded.bound, recorded_at = excluded.recorded_at,
    submission_id = excluded.submission_id
WHERE (excluded.recorded_at, excluded.submission_id)
    > (leaderboard_measuredroofline.recorded_at, leaderboard_measuredroofline.submission_id)
"""


def _json_or_null(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def measured_roofline_after_result(*, result: Result) -> None:
    """Called by ``result_record`` once a result is stored (inside its transaction): a document with a roofline
    becomes its problem version's measured roofline on the profile unless a newer one is kept (one query, whatever
    the order results land in; recording the same result again changes nothing)."""
    document = result.document
    roofline = document.get("roofline") if isinstance(document, dict) else None
    if result.problem_version is None or not isinstance(roofline, dict) or "time_us" not in roofline:
        return
    submission = result.submission
    with connection.cursor() as cursor:
        cursor.execute(
            _ROOFLINE_UPSERT,
            [
                submission.problem_id,
                submission.profile,
                result.problem_version,
                _json_or_null(roofline["time_us"]),
                _json_or_null(roofline.get("bound")),
                result.recorded_at,
                result.submission_id,
            ],
        )


def measured_rooflines_rebuild() -> int:
    """Every measured roofline recomputed from the results (the rows recording them one by one leaves). Returns
    how many."""
    newest: dict[tuple[str, str, int], MeasuredRoofline] = {}
    rows = (
        Result.objects.filter(problem_version__isnull=False, document__roofline__time_us__isnull=False)
        .order_by("recorded_at", "submission_id")
        .values_list(
            "submission__problem_id",
            "submission__profile",
            "problem_version",
            "document__roofline__time_us",
            "document__roofline__bound",
            "recorded_at",
            "submission_id",
        )
    )
    for problem_id, profile, version, time_us, bound, at, sid in rows.iterator(chunk_size=2000):
        newest[problem_id, profile, version] = MeasuredRoofline(
            problem_id=problem_id,
            profile=profile,
            problem_version=version,
            time_us=time_us,
            bound=bound,
            recorded_at=at,
            submission_id=sid,
        )
    with transaction.atomic():
        MeasuredRoofline.objects.all().delete()
        MeasuredRoofline.objects.bulk_create(newest.values(), batch_size=1000)
    return len(newest)


# --- a problem page's baseline ------------------------------------------------------------------------


def measured_baseline_after_result(*, result: Result) -> None:
    """Called by ``result_record`` once a result is stored (inside its transaction): a result that timed the
    baseline refreshes its problem version's baseline on the profile (``selectors.baseline_timings``: one query for
    its count and median, one to write them), so the problem page reads one row instead of every evaluation's time.
    Recording the same result again writes the same values."""
    if result.baseline_median_us is None or result.problem_version is None:
        return
    submission = result.submission
    _baseline_write(submission.problem_id, submission.profile, result.problem_version)


_BASELINE_UPSERT = """
INSERT INTO leaderboard_measuredbaseline (problem_id, profile, problem_version, evaluations, median_us)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (problem_id, profile, problem_version) DO UPDATE SET
    evaluations = excluded.evaluations, median_us = excluded.median_us
"""


def _baseline_write(problem_id: str, profile: str, version: int) -> None:
    """The baseline of ``problem_id``'s ``version`` on ``profile`` as the results give it, written in one query (none
    timed it: no row)."""
    evaluations, median = selectors.baseline_timings(problem_id=problem_id, profile=profile, version=version)
    if not evaluations or median is None:
        MeasuredBaseline.objects.filter(problem_id=problem_id, profile=profile, problem_version=version).delete()
        return
    with connection.cursor() as cursor:
        cursor.execute(_BASELINE_UPSERT, [problem_id, profile, version, evaluations, median])


def measured_baselines_rebuild() -> int:
    """Every problem version's baseline on each profile recomputed from the results (the rows recording them one by
    one leaves). Returns how many."""
    keys = sorted(
        Result.objects.filter(baseline_median_us__isnull=False, problem_version__isnull=False)
        .values_list("submission__problem_id", "submission__profile", "problem_version")
        .distinct(),
        key=str,
    )
    with transaction.atomic():
        MeasuredBaseline.objects.all().delete()
        for problem_id, profile, version in keys:
            _baseline_write(problem_id, profile, version)
    return MeasuredBaseline.objects.count()


# --- the values the runs' filters offer ------------------------------------------------------------------

FILTER_FIELDS = {"profile", "precision", "k"}


def run_filter_choices_after_save(*, run: ModelRun, created: bool, update_fields: Any = None) -> None:
    """Called when a run is saved (inside the caller's transaction): a new run's hardware, precision and k are
    offered by the ranking's filters (one query); a run whose values may have changed can also leave a value no run
    has, which is dropped (one more). Saving its progress or publishing it costs nothing here."""
    if not created and update_fields is not None and not FILTER_FIELDS.intersection(update_fields):
        return
    RunFilterChoice.objects.bulk_create(
        [RunFilterChoice(profile=run.profile, precision=run.precision, k=run.k)], ignore_conflicts=True
    )
    if not created:
        _run_filter_choices_prune()


def run_filter_choices_after_delete(*, run: ModelRun) -> None:
    """Called when a run is deleted: a value no other run has is no longer offered (one query)."""
    RunFilterChoice.objects.filter(profile=run.profile, precision=run.precision, k=run.k).exclude(
        Exists(ModelRun.objects.filter(profile=OuterRef("profile"), precision=OuterRef("precision"), k=OuterRef("k")))
    ).delete()


def _run_filter_choices_prune() -> None:
    RunFilterChoice.objects.exclude(
        Exists(ModelRun.objects.filter(profile=OuterRef("profile"), precision=OuterRef("precision"), k=OuterRef("k")))
    ).delete()


def run_filter_choices_rebuild() -> int:
    """The filters' values recomputed from the runs. Returns how many."""
    seen = set(ModelRun.objects.order_by().values_list("profile", "precision", "k").distinct())
    with transaction.atomic():
        RunFilterChoice.objects.all().delete()
        RunFilterChoice.objects.bulk_create([RunFilterChoice(profile=p, precision=q, k=k) for p, q, k in seen])
    return len(seen)
