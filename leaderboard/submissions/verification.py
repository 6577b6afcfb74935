"""Re-measurements: the leaders' figures measured again, so a lucky evaluation cannot hold a top place unchecked.

After a passed result lands on a profile that measures speed (``rankings.metrics.measures_speed``):

- the top ``ARENA_VERIFY_TOP_ENTRIES`` (default 3) rows of that problem's ranking, and
- every run in the top ``ARENA_VERIFY_TOP_RUNS`` (default 10) of the overall ranking (its best passed, timed attempt
  at each problem)

that have no re-measurement yet get one: a new submission of the same source, problem and profile with
``remeasure_of`` set to the evaluation it checks, made and queued the one way every evaluation is
(``queueing.submission_row``, ``queueing.enqueue_after_commit``). It is queued after the original finished, so it
runs later; with more than one worker on the profile's queue it usually lands on another host (the result records
which host measured it, and the page says whether it was another). A re-measurement is never ranked itself; the
ranking compares it with the figure it checks (``rankings.solutions``): ✓ when their intervals overlap, flagged
with both figures when they do not.
"""

from __future__ import annotations

import logging

from django.conf import settings

from evaluator.contract.result import Verdict
from leaderboard.models import ModelRun, Result, Submission
from leaderboard.rankings import generations, metrics, ranking_rows, run_selectors, standing
from leaderboard.rankings import selectors as rankings
from leaderboard.submissions import queueing

logger = logging.getLogger(__name__)


def top_entries() -> int:
    return settings.ARENA_VERIFY_TOP_ENTRIES


def top_runs() -> int:
    return settings.ARENA_VERIFY_TOP_RUNS


def remeasure(original: Submission) -> Submission:
    """Queues a re-measurement of ``original`` (after the transaction commits) and returns its row."""
    row = queueing.submission_row(
        user=original.user,
        problem=original.problem,
        profile=original.profile,
        filename=original.filename,
        text=original.source,
    )
    row.remeasure_of = original
    row.save()
    queueing.enqueue_after_commit(row)
    logger.info("submission %s: re-measurement %s queued", original.pk, row.pk)
    return row


def _remeasured(submission_ids) -> set[int]:
    return set(
        Submission.objects.filter(remeasure_of_id__in=list(submission_ids)).values_list("remeasure_of_id", flat=True)
    )


def problem_leaders_remeasure(*, problem, profile: str) -> list[Submission]:
    """Re-measures the first evaluation of each of the top rows of the problem's ranking that has none yet. The rows
    are read as the problem's standing keeps them (``rankings.ranking_rows``), current in the result's transaction:
    the ranking ``rankings.problem_ranking`` computes, without ranking every evaluation again."""
    measured = rankings.problem_measurement(problem=problem, profile=profile)
    entries = list(
        ranking_rows.problem_ranking_rows(
            problem=problem, profile=profile, version=measured.version, revision=measured.revision
        ).values_list("submission_id", "submission_ids")[: top_entries()]
    )
    done = _remeasured(sid for _, ids in entries for sid in ids)
    wanted = [first for first, ids in entries if not done.intersection(ids)]
    return [remeasure(s) for s in Submission.objects.filter(pk__in=wanted).select_related("problem", "user")]


def top_runs_remeasure(*, profile: str) -> list[Submission]:
    """Re-measures, for every ranked run of the top ten on a timed profile without re-measurements, its best passed
    timed attempt at each problem."""
    runs = list(
        run_selectors.model_run_ranking(standing=run_selectors.RANKED)
        .filter(profile=profile)
        .values_list("pk", flat=True)[: top_runs()]
    )
    checked = set(
        Submission.objects.filter(remeasure_of__model_run_id__in=runs).values_list(
            "remeasure_of__model_run_id", flat=True
        )
    )
    made = []
    for run_id in runs:
        if run_id in checked:
            continue
        best: dict[str, Result] = {}
        for result in (
            Result.objects.filter(submission__model_run_id=run_id, verdict=Verdict.PASSED.value, speedup__isnull=False)
            .select_related("submission__problem", "submission__user")
            .order_by("-speedup", "pk")
        ):
            best.setdefault(result.submission.problem_id, result)
        made += [remeasure(r.submission) for r in best.values()]
    return made


def after_result(result: Result) -> None:
    """Called by ``results.result_record`` once a result is stored (inside its transaction)."""
    if not settings.ARENA_VERIFY:
        return
    submission = result.submission
    if submission.remeasure_of_id is not None:
        original = submission.remeasure_of
        scopes = [generations.problem_scope(original.problem_id)]
        if original.model_run_id:
            scopes += [generations.run_scope(original.model_run_id), generations.RUNS]
        generations.rankings_changed(*scopes)
        return
    if result.verdict != Verdict.PASSED.value or not metrics.measures_speed(submission.profile):
        return
    problem_leaders_remeasure(problem=submission.problem, profile=submission.profile)
    if (
        submission.model_run_id is not None
        and ModelRun.objects.filter(pk=submission.model_run_id, score__status=standing.RANKED).exists()
    ):
        top_runs_remeasure(profile=submission.profile)
