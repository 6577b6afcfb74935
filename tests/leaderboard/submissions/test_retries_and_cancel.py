"""Infrastructure errors are retried as new attempts, a bounded number of times; the solution's own verdicts never
are. Reports from an attempt that was replaced cannot undo the current one. The owner can cancel a submission;
nobody else can."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer
from rq.results import Result as JobResult

from leaderboard.model_runs.services import model_run_create
from leaderboard.submissions.reaper import submissions_reap
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create, submission_mark_running
from leaderboard.models import Result, Submission
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document, signed_return


@pytest.fixture
def create(problems, user, redis_conn, django_capture_on_commit_callbacks):
    def make(owner=None) -> Submission:
        with django_capture_on_commit_callbacks(execute=True):
            submission = submission_create(
                user=owner or user,
                problem=ALL_REDUCE,
                profile="cpu-gloo-2",
                filename="s.py",
                source=CORRECT.read_text(),
            )
        submission.refresh_from_db()
        return submission

    return make


@pytest.fixture
def deliver(django_capture_on_commit_callbacks):
    """A worker's report, stored the way leaderboard.submissions.jobs.record_result stores it; what the service enqueues
    reaches Redis when its transaction commits."""

    def run(submission, document, job_id=None):
        with django_capture_on_commit_callbacks(execute=True):
            return result_record(submission_id=submission.pk, document=document, job_id=job_id)

    return run


def _queued(redis_conn) -> list[str]:
    return Queue("cpu-gloo-2", connection=redis_conn).job_ids


def test_an_infra_error_is_retried_as_a_new_job_until_the_attempts_run_out(create, deliver, redis_conn, settings):
    settings.ARENA_MAX_ENQUEUES = 3
    submission = create()
    for attempt in (1, 2):
        assert (
            deliver(
                submission,
                failed_document("infra_error", "the GPU fell off the bus"),
                job_id=f"submission-{submission.pk}-{attempt}",
            )
            is None
        )
        submission.refresh_from_db()
        assert (submission.state, submission.enqueue_count) == ("queued", attempt + 1)
        assert submission.job_id in _queued(redis_conn) and not Result.objects.exists()

    result = deliver(submission, failed_document("infra_error", "the GPU fell off the bus"), job_id=submission.job_id)

    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.enqueue_count) == ("finished", "infra_error", 3)
    assert result.document["message"].startswith("the GPU fell off the bus")
    assert "Attempt 3 of 3" in result.document["message"]


@pytest.mark.parametrize("verdict", ["wrong_output", "runtime_error", "compile_error", "timeout", "rejected"])
def test_a_verdict_on_the_solution_is_never_retried(verdict, create, deliver, redis_conn):
    submission = create()
    deliver(submission, failed_document(verdict), job_id=submission.job_id)
    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.enqueue_count) == ("finished", verdict, 1)
    assert _queued(redis_conn) == [submission.job_id]  # nothing new was queued (the first job is still there here)


def test_an_infra_error_from_a_replaced_attempt_is_ignored(create, deliver, redis_conn):
    submission = create()
    deliver(submission, failed_document("infra_error"), job_id=submission.job_id)  # attempt 2 is queued
    deliver(submission, failed_document("infra_error"), job_id=f"submission-{submission.pk}-1")  # a late duplicate
    submission.refresh_from_db()
    assert (submission.state, submission.enqueue_count) == ("queued", 2)


def test_a_real_verdict_from_a_replaced_attempt_is_kept_and_the_queued_attempt_dropped(create, deliver, redis_conn):
    submission = create()
    first = submission.job_id
    deliver(submission, failed_document("infra_error"), job_id=first)
    submission.refresh_from_db()
    second = submission.job_id
    assert second in _queued(redis_conn)

    deliver(submission, passed_document(1.4), job_id=first)  # the first worker was slow, not dead

    submission.refresh_from_db()
    assert (submission.state, submission.verdict) == ("finished", "passed")
    assert second not in _queued(redis_conn)
    assert Job.fetch(second, connection=redis_conn).get_status() == "canceled"
    deliver(submission, passed_document(9.0), job_id=second)  # had it run anyway: ignored
    assert Result.objects.get().speedup == 1.4


def test_a_running_message_from_a_replaced_attempt_changes_nothing(create, deliver):
    submission = create()
    deliver(submission, failed_document("infra_error"), job_id=submission.job_id)
    submission_mark_running(
        submission_id=submission.pk, worker="old", started_at=0, job_id=f"submission-{submission.pk}-1"
    )
    submission.refresh_from_db()
    assert (submission.state, submission.worker) == ("queued", "")


def test_the_reaper_retries_a_job_that_failed_without_replying(create, redis_conn, django_capture_on_commit_callbacks):
    submission = create()
    submission_mark_running(submission_id=submission.pk, worker="gpu-7", started_at=timezone.now())
    job = Job.fetch(submission.job_id, connection=redis_conn, serializer=JSONSerializer)
    redis_conn.lrem(Queue("cpu-gloo-2", connection=redis_conn).key, 0, job.id)
    job.set_status("failed")  # what RQ records when the work horse is killed (OOM killer, a segfault)
    JobResult.create_failure(job, ttl=600, exc_string="Work-horse terminated unexpectedly; waitpid returned 9")

    with django_capture_on_commit_callbacks(execute=True):
        report = submissions_reap()

    assert report.requeued == [submission.pk]
    submission.refresh_from_db()
    assert (submission.state, submission.enqueue_count, submission.worker) == ("queued", 2, "")
    assert _queued(redis_conn) == [submission.job_id]


def test_the_reaper_retries_a_finished_job_whose_lost_reply_was_an_infra_error(
    create, redis_conn, django_capture_on_commit_callbacks
):
    submission = create()
    job = Job.fetch(submission.job_id, connection=redis_conn, serializer=JSONSerializer)
    redis_conn.delete(Queue("cpu-gloo-2", connection=redis_conn).key)
    job.set_status("finished")
    JobResult.create(
        job,
        JobResult.Type.SUCCESSFUL,
        ttl=600,
        return_value=signed_return(submission.pk, job.id, failed_document("infra_error")),
    )

    from django.conf import settings

    with django_capture_on_commit_callbacks(execute=True):
        report = submissions_reap(now=timezone.now() + timedelta(seconds=settings.ARENA_REAP_GRACE_S + 1))

    assert report.requeued == [submission.pk]
    submission.refresh_from_db()
    assert (submission.state, submission.enqueue_count) == ("queued", 2)


# --- cancel ----------------------------------------------------------------------------------------------


@pytest.fixture
def other(django_user_model):
    return django_user_model.objects.create_user(username="mallory", password="another-long-password-2")


def test_the_owner_cancels_a_queued_submission_through_the_api(
    create, api_client, redis_conn, deliver, django_capture_on_commit_callbacks
):
    submission = create()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/submissions/{submission.pk}/cancel/")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "cancelled"
    assert _queued(redis_conn) == []
    deliver(submission, passed_document(3.0))  # a late result of a cancelled submission is dropped
    submission.refresh_from_db()
    assert (submission.state, submission.verdict) == ("cancelled", None) and not Result.objects.exists()
    assert api_client.post(f"/api/submissions/{submission.pk}/cancel/").status_code == 200  # again: no change


def test_nobody_else_can_cancel_a_submission(create, other, client, redis_conn):
    submission = create()
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(other)
    response = api.post(f"/api/submissions/{submission.pk}/cancel/")
    assert response.status_code == 403 and "author" in response.json()["detail"]
    assert APIClient().post(f"/api/submissions/{submission.pk}/cancel/").status_code in (401, 403)
    client.force_login(other)
    assert client.post(reverse("submission-cancel", args=[submission.pk])).status_code == 403
    page = client.get(reverse("submission-detail", args=[submission.pk])).content.decode()
    assert 'id="cancel-form"' not in page
    submission.refresh_from_db()
    assert submission.state == "queued" and _queued(redis_conn) == [submission.job_id]


def test_a_finished_submission_cannot_be_cancelled(create, api_client, deliver):
    submission = create()
    deliver(submission, failed_document())
    response = api_client.post(f"/api/submissions/{submission.pk}/cancel/")
    assert response.status_code == 400 and "already finished" in response.json()["detail"]


def test_the_owner_cancels_from_the_status_page(create, web_client, redis_conn, django_capture_on_commit_callbacks):
    submission = create()
    page = web_client.get(reverse("submission-detail", args=[submission.pk])).content.decode()
    assert 'id="cancel-form"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = web_client.post(reverse("submission-cancel", args=[submission.pk]), follow=True)
    assert response.status_code == 200 and "was cancelled" in response.content.decode()
    submission.refresh_from_db()
    assert submission.state == "cancelled" and _queued(redis_conn) == []
    assert web_client.get(reverse("submission-cancel", args=[submission.pk])).status_code == 405


def test_cancelling_the_last_pending_attempt_of_a_model_run_finishes_the_run(
    problems, user, api_client, django_capture_on_commit_callbacks, run_worker
):
    from leaderboard.model_runs.writer import build_archive
    from leaderboard.models import ModelRun
    from tests.leaderboard.run_fixtures import MANIFEST

    with django_capture_on_commit_callbacks(execute=True):
        run = model_run_create(
            user=user,
            filename="run.zip",
            data=build_archive(dict(MANIFEST, k=1), {(ALL_REDUCE, 1): CORRECT.read_text()}),
        )
    attempt = Submission.objects.get(model_run=run)
    with django_capture_on_commit_callbacks(execute=True):
        assert api_client.post(f"/api/submissions/{attempt.pk}/cancel/").status_code == 200
    assert run_worker("web")  # the job the cancel asked for scores the run and counts its progress
    run.refresh_from_db()
    assert (run.state, run.attempts_done, run.attempts_total) == (ModelRun.State.FINISHED, 1, 1)
