"""The reaper makes Redis agree with the database: lost jobs are queued again, silent workers' rows fail."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from leaderboard.submissions.reaper import submissions_reap
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create, submission_mark_running
from leaderboard.models import Submission
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document, signed_return


@pytest.fixture
def create(problems, user, redis_conn, django_capture_on_commit_callbacks):
    def make(profile: str = "cpu-gloo-2") -> Submission:
        with django_capture_on_commit_callbacks(execute=True):
            submission = submission_create(
                user=user, problem=ALL_REDUCE, profile=profile, filename="s.py", source=CORRECT.read_text()
            )
        submission.refresh_from_db()
        return submission

    return make


@pytest.fixture
def reap(django_capture_on_commit_callbacks):
    """Runs the reaper; what it enqueues goes to Redis when its transaction commits, as in production."""

    def run(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return submissions_reap(**kwargs)

    return run


def later(seconds: float = 0):
    from django.conf import settings

    return timezone.now() + timedelta(seconds=settings.ARENA_REAP_GRACE_S + 1 + seconds)


def test_reaper_requeues_a_queued_submission_whose_job_redis_lost(create, reap, redis_conn):
    submission = create()
    queue = Queue("cpu-gloo-2", connection=redis_conn)
    assert queue.job_ids == [submission.job_id]
    Job.fetch(submission.job_id, connection=redis_conn).delete()  # what a Redis restart without persistence does
    assert queue.count == 0

    report = reap(now=later())

    assert report.requeued == [submission.pk]
    submission.refresh_from_db()
    assert submission.state == "queued" and submission.enqueue_count == 2
    assert submission.job_id == f"submission-{submission.pk}-2"
    assert queue.job_ids == [submission.job_id]


def test_reaper_leaves_a_job_that_is_waiting_its_turn(create, reap, redis_conn):
    submission = create()
    report = reap(now=later())
    assert report.requeued == [] and report.failed == []
    assert Queue("cpu-gloo-2", connection=redis_conn).job_ids == [submission.job_id]


def test_reaper_does_not_touch_a_submission_enqueued_moments_ago(create, reap, redis_conn):
    submission = create()
    Job.fetch(submission.job_id, connection=redis_conn).delete()
    assert reap().checked == 0


def test_reaper_fails_a_running_submission_whose_worker_went_silent(create, reap, redis_conn, settings):
    settings.ARENA_MAX_ENQUEUES = 1  # no attempt left: the row ends (tests/leaderboard/test_retries.py: retried)
    settings.ARENA_QUEUED_JOBS_PER_USER = 2  # both of this user's jobs in RQ at once
    stale, fresh = create(), create()
    long_ago = timezone.now() - timedelta(hours=2)
    submission_mark_running(submission_id=stale.pk, worker="gpu-host-7", started_at=long_ago)
    submission_mark_running(submission_id=fresh.pk, worker="gpu-host-8", started_at=timezone.now())
    for submission in (stale, fresh):  # Redis lost both jobs while they ran
        Job.fetch(submission.job_id, connection=redis_conn).delete()

    report = reap()

    assert report.failed == [stale.pk]
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.state, stale.verdict) == ("finished", "infra_error")
    message = stale.result.document["message"]
    assert "gpu-host-7" in message and "never reported a result" in message and "submit it again" in message
    assert fresh.state == "running"


def test_a_late_result_after_the_reaper_failed_the_row_changes_nothing(create, reap, redis_conn, settings):
    settings.ARENA_MAX_ENQUEUES = 1
    submission = create()
    Job.fetch(submission.job_id, connection=redis_conn).delete()
    submission_mark_running(submission_id=submission.pk, worker="w", started_at=timezone.now() - timedelta(hours=2))
    reap()
    result_record(submission_id=submission.pk, document=passed_document(3.0))
    submission.refresh_from_db()
    assert submission.verdict == "infra_error"


def test_reaper_recovers_a_result_whose_reply_was_lost(create, reap, redis_conn):
    submission = create()
    job = Job.fetch(submission.job_id, connection=redis_conn, serializer=JSONSerializer)
    # A worker finished the job (its return value is the document) but the reply on the web queue was lost.
    job.set_status("finished")
    from rq.results import Result as JobResult

    JobResult.create(
        job, JobResult.Type.SUCCESSFUL, ttl=600, return_value=signed_return(submission.pk, job.id, passed_document(1.7))
    )
    redis_conn.delete(Queue("cpu-gloo-2", connection=redis_conn).key)

    report = reap(now=later())

    assert report.recovered == [submission.pk]
    submission.refresh_from_db()
    assert (submission.state, submission.verdict) == ("finished", "passed")
    assert submission.result.speedup == 1.7


def test_reaper_gives_up_after_the_job_is_lost_too_often(create, reap, redis_conn, settings):
    submission = create()
    for _ in range(settings.ARENA_MAX_ENQUEUES):
        submission.refresh_from_db()
        Job.fetch(submission.job_id, connection=redis_conn).delete()
        reap(now=later(3600 * _))
    submission.refresh_from_db()
    assert submission.verdict == "infra_error" and "Attempt 3 of 3" in submission.result.document["message"]


def test_reap_command_runs_once(create, redis_conn, capsys, django_capture_on_commit_callbacks):
    submission = create()
    submission_mark_running(submission_id=submission.pk, worker="w", started_at=timezone.now() - timedelta(hours=2))
    Job.fetch(submission.job_id, connection=redis_conn).delete()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("reap")
    assert f"re-enqueued [{submission.pk}]" in capsys.readouterr().out
