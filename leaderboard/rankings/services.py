"""The one write of rankings: a model run's ranking row (``RunScore``), recomputed by the selector that computes
every run score (``selectors.model_run_score``) whenever one of its attempts settles, with the run's progress.

Precomputed so ranking pages read one row per run; recomputed from scratch each time, so it is idempotent.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from leaderboard.models import ModelRun, RunScore, Submission
from leaderboard.rankings import generations, scores, selectors


# RunScore's interval columns per key of ``metrics.Aggregate.intervals``.
INTERVAL_FIELDS = {"pass_at_k": ("pass_at_k_low", "pass_at_k_high"), "fast_1": ("fast_1_low", "fast_1_high"),
                   "fast_1_5": ("fast_1_5_low", "fast_1_5_high"), "fast_2": ("fast_2_low", "fast_2_high"),
                   "geomean": ("geomean_low", "geomean_high")}


def run_score_refresh(*, model_run_id: int) -> RunScore | None:
    """Recomputes a run's progress (attempts done, state) and its RunScore from its attempts as they stand.

    Called inside ``result_record``'s transaction; the run's row is locked so results of one run landing at
    once on several web workers are counted one after another. Recomputing from scratch keeps it idempotent.
    """
    with transaction.atomic():
        run = ModelRun.objects.select_for_update().filter(pk=model_run_id).first()
        if run is None:
            return None
        attempts = selectors.model_run_attempts(run=run)
        score = selectors.model_run_score(run=run, attempts=attempts)
        at_1 = selectors.model_run_score(run=run, attempts=attempts, k=1, suite={}, intervals=False)
        overall = score.overall
        intervals = overall.intervals
        revisions = sorted({a.protocol_revision for a in attempts if a.protocol_revision is not None})
        values = {
            "k": score.k,
            "pass_at_1": at_1.overall.mean_pass_at_k,
            "pass_at_k": overall.mean_pass_at_k,
            "fast_1_at_k": overall.mean_fast_p_at_k.get(1.0),
            "fast_1_5_at_k": overall.mean_fast_p_at_k.get(1.5),
            "fast_2_at_k": overall.mean_fast_p_at_k.get(2.0),
            "geomean_speedup": overall.geomean_speedup,
            "mean_roofline_fraction": overall.mean_roofline_fraction,
            "problems_scored": overall.problems,
            "problems_not_scorable": len(overall.not_scorable),
            "problems_not_attempted": len(overall.not_attempted),
            "coverage": overall.coverage,
            "correct_attempts": overall.correct_attempts,
            "by_category": {cat: scores.aggregate_record(agg) for cat, agg in score.by_category.items()},
            "status": selectors.model_run_status(run=run, attempts=attempts, score=score),
            "timed": score.timed,
            "protocol_revision": revisions[-1] if revisions else None,
        }
        for name, (low, high) in INTERVAL_FIELDS.items():
            interval = intervals.get(name)
            values[low], values[high] = (interval.low, interval.high) if interval else (None, None)
        row, _ = RunScore.objects.update_or_create(model_run=run, defaults=values)
        generations.rankings_changed(generations.RUNS, generations.run_scope(run.pk),
                                     generations.user_scope_of(run.user_id))

        done = sum(1 for a in attempts if a.is_done)
        started = any(a.state != Submission.State.QUEUED for a in attempts)
        state = (ModelRun.State.FINISHED if attempts and done == len(attempts)
                 else ModelRun.State.RUNNING if started else ModelRun.State.QUEUED)
        if (run.attempts_done, run.attempts_total, run.state) != (done, len(attempts), state):
            run.attempts_done, run.attempts_total = done, len(attempts)
            if state == ModelRun.State.FINISHED and run.state != state:
                run.finished_at = timezone.now()
            run.state = state
            run.save(update_fields=["attempts_done", "attempts_total", "state", "finished_at"])
    return row
