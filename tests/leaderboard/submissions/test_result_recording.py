"""What workers report is stored idempotently, through the real "web" queue jobs."""

from __future__ import annotations

import math

import pytest
from rq import Queue
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from evaluator.contract.jobs import MARK_RUNNING, RECORD_RESULT

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create, submission_mark_running
from leaderboard.models import Result, Submission
from leaderboard.lifecycle.signatures import nonce_for
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document, signed_reply


@pytest.fixture
def submission(problems, user):
    return submission_create(
        user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
    )


def test_record_result_twice_changes_nothing_the_second_time(submission):
    first = result_record(submission_id=submission.pk, document=passed_document(1.5))
    submission.refresh_from_db()
    finished_at = submission.finished_at

    again = result_record(submission_id=submission.pk, document=failed_document())

    assert again.pk == first.pk and Result.objects.count() == 1
    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.finished_at) == ("finished", "passed", finished_at)
    assert Result.objects.get().document["verdict"] == "passed"
    assert Result.objects.get().speedup == 1.5


def _reply(kind: str, submission: Submission, *body: object) -> tuple:
    """A worker's reply as evaluator.host.jobs sends it: the row, the body, the job issued, its nonce and the
    signature."""
    job_id = submission.job_id
    facts = {"worker": body[0], "started": body[1]} if kind == MARK_RUNNING else body[0]
    return (kind, submission.pk, *body, job_id, *signed_reply(kind, submission.pk, job_id, facts))


def test_duplicate_deliveries_through_the_web_queue_are_recorded_once(submission, redis_conn, run_worker):
    web = Queue("web", connection=redis_conn, serializer=JSONSerializer)
    web.enqueue(*_reply(MARK_RUNNING, submission, "worker-a", 1_700_000_000.0))
    web.enqueue(*_reply(RECORD_RESULT, submission, passed_document(2.0)))
    web.enqueue(*_reply(RECORD_RESULT, submission, passed_document(9.0)))
    web.enqueue(*_reply(MARK_RUNNING, submission, "worker-b", 1_800_000_000.0))
    run_worker("web")

    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.worker) == ("finished", "passed", "worker-a")
    assert submission.started_at.timestamp() == 1_700_000_000.0
    assert Result.objects.get().speedup == 2.0


def test_unsigned_deliveries_through_the_web_queue_are_refused(submission, redis_conn, run_worker, caplog):
    web = Queue("web", connection=redis_conn, serializer=JSONSerializer)
    # the old unsigned shape (no job, nonce or signature) is not a reply's payload
    bare = [
        web.enqueue(MARK_RUNNING, submission.pk, "worker-a", 1_700_000_000.0),
        web.enqueue(RECORD_RESULT, submission.pk, passed_document(2.0)),
    ]
    # the right shape with the nonce of the job but no signature, or a signature over something else
    nonce = nonce_for(submission.job_id)
    web.enqueue(RECORD_RESULT, submission.pk, passed_document(2.0), submission.job_id, nonce, "")
    web.enqueue(
        MARK_RUNNING,
        submission.pk,
        "worker-a",
        1_700_000_000.0,
        submission.job_id,
        nonce,
        _reply(RECORD_RESULT, submission, passed_document(2.0))[-1],
    )
    run_worker("web")

    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.worker) == ("queued", None, "")
    assert not Result.objects.exists()
    assert {job.id for job in bare} <= set(FailedJobRegistry("web", connection=redis_conn).get_job_ids())
    refused = [r for r in caplog.records if r.name == "arena.replies" and r.levelname == "ERROR"]
    assert len(refused) == 2, [r.getMessage() for r in refused]


def test_result_denormalises_timing_roofline_and_problem_version(submission):
    result = result_record(submission_id=submission.pk, document=passed_document(1.25, version=7))
    assert result.speedup == 1.25
    assert (result.speedup_ci_low, result.speedup_ci_high) == pytest.approx((1.25 * 0.95, 1.25 * 1.05))
    assert result.baseline_median_us == 125.0 and result.solution_median_us == 100.0
    assert result.roofline_fraction == 0.1 and result.problem_version == 7


def test_a_result_with_nan_or_an_unknown_verdict_is_stored_as_an_infra_error(submission, settings):
    settings.ARENA_MAX_ENQUEUES = 1  # an infra_error with attempts left is retried instead (test_retries.py)
    document = passed_document(1.0)
    document["verdict"] = "excellent"
    document["roofline"]["solution_fraction"] = math.inf
    document["logs"] = {"rank0": "nul\x00byte"}
    result = result_record(submission_id=submission.pk, document=document)
    result.refresh_from_db()
    assert result.verdict == "infra_error" and "unknown verdict 'excellent'" in result.document["message"]
    assert result.roofline_fraction is None and result.document["roofline"]["solution_fraction"] is None
    assert "\x00" not in result.document["logs"]["rank0"]


def test_mark_running_only_moves_a_queued_submission(submission):
    submission_mark_running(submission_id=submission.pk, worker="w1", started_at=1_700_000_000.0)
    submission.refresh_from_db()
    assert submission.state == Submission.State.RUNNING and submission.heartbeat_at == submission.started_at
    result_record(submission_id=submission.pk, document=failed_document())
    submission_mark_running(submission_id=submission.pk, worker="w2", started_at=1_800_000_000.0)
    submission.refresh_from_db()
    assert (submission.state, submission.worker) == ("finished", "w1")


def test_reports_about_unknown_submissions_are_dropped(db):
    assert result_record(submission_id=999_999, document=passed_document(1.0)) is None
    assert submission_mark_running(submission_id=999_999, worker="w", started_at=0) is None
