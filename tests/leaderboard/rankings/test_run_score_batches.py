"""A model run's score and progress are computed once per batch of results, by one job on the web queue, not once per
result: recording a result only marks the run stale (a few queries whatever its size), the first mark of a batch asks
the web worker to score the run, and the job counts every result recorded by then. Replayed jobs and results change
nothing."""

from __future__ import annotations

import django_rq
import pytest

from evaluator.contract import jobs
from leaderboard.models import RunScore
from leaderboard.rankings import run_selectors, scores, services
from leaderboard.submissions.results import result_record
from tests.leaderboard import run_fixtures as fx

pytestmark = pytest.mark.django_db

# What recording one result of a model run cost before a run was scored per batch (35 queries; 59 once its whole
# score was stored): marking the run stale must cost less than either, whatever the run's size.
RECORD_QUERIES_BEFORE = 35


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _record_all(run, capture) -> None:
    """Every pre-made result of the fixture run, each in a transaction of its own that commits (as the web worker
    records them, one job per result)."""
    for submission in run.attempts.select_related("problem").order_by("pk"):
        verdict, speedup, fraction = fx.OUTCOMES[submission.problem_id, submission.attempt]
        for _ in range(10):  # an infra_error is retried (re-enqueued) until the last allowed attempt
            with capture(execute=True):
                recorded = result_record(
                    submission_id=submission.pk,
                    document=fx.document(verdict, speedup, fraction, submission.problem_id, submission.problem.version),
                )
            if recorded:
                break


def test_a_batch_of_results_is_scored_once_by_one_web_job(
    problems, user, run_worker, monkeypatch, django_capture_on_commit_callbacks
):
    run = fx.make_run(user, record=False)
    refreshes = []
    real = services.run_score_refresh
    monkeypatch.setattr(services, "run_score_refresh", lambda **kw: refreshes.append(kw) or real(**kw))
    _record_all(run, django_capture_on_commit_callbacks)
    web = django_rq.get_queue(jobs.WEB_QUEUE)
    assert web.job_ids and all(web.fetch_job(i).func_name == jobs.RUN_SCORE_REFRESH for i in web.job_ids)
    assert len(web.job_ids) == 1, "one job for the whole batch"
    run.refresh_from_db()
    assert (run.attempts_done, run.score_stale_since is not None) == (0, True)  # not scored in any recording

    assert run_worker("web")
    assert refreshes == [{"model_run_id": run.pk}]
    run.refresh_from_db()
    assert (run.state, run.attempts_done, run.attempts_total, run.score_stale_since) == ("finished", 12, 12, None)
    assert scores.stored_score(run) == run_selectors.model_run_score(run=run)  # every result counted
    assert run.score.pass_at_k == pytest.approx(fx.PASS_AT_K, rel=1e-12, abs=0)

    # replays: the job once more, every result delivered again
    stamp = RunScore.objects.get(pk=run.pk).updated_at
    web.enqueue(jobs.RUN_SCORE_REFRESH, run.pk)
    _record_all(run, django_capture_on_commit_callbacks)
    assert web.count == 1 and run_worker("web")
    assert refreshes == [{"model_run_id": run.pk}] and RunScore.objects.get(pk=run.pk).updated_at == stamp


def test_a_run_whose_job_was_lost_is_asked_for_again_by_the_reaper(problems, user, run_worker, settings):
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import ModelRun
    from leaderboard.submissions.reaper import submissions_reap

    run = fx.make_run(user)  # scored
    settings.ARENA_REAP_GRACE_S = 60
    # a result recorded while Redis was down: stale, and no job was ever enqueued
    ModelRun.objects.filter(pk=run.pk).update(score_stale_since=timezone.now() - timedelta(seconds=30), attempts_done=0)
    assert submissions_reap().runs_rescored == 0  # within the grace: its job may still be on its way
    ModelRun.objects.filter(pk=run.pk).update(score_stale_since=timezone.now() - timedelta(seconds=300))
    assert submissions_reap().runs_rescored == 1
    assert run_worker("web")
    run.refresh_from_db()
    assert (run.attempts_done, run.score_stale_since) == (12, None)


def test_recording_a_result_costs_fewer_queries_than_scoring_the_run_did(problems, user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    run = fx.make_run(user, record=False)
    counts = []
    for submission in run.attempts.select_related("problem").filter(problem_id="collectives/all_reduce")[:2]:
        with CaptureQueriesContext(connection) as queries:
            result_record(
                submission_id=submission.pk,
                document=fx.document("passed", 1.5, 0.4, submission.problem_id, submission.problem.version),
            )
        counts.append(len(queries))
    assert max(counts) < RECORD_QUERIES_BEFORE, counts
