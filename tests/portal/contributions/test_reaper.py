"""Proposal checks fail through the same path as evaluations: the reaper (``manage.py reap``) settles a check whose
job Redis lost (checked again while it has attempts left, failed after the last) and one whose job died."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone
from rq import Queue
from rq.job import Job, JobStatus

from evaluator.contract.jobs import CHECKS_QUEUE
from portal.contributions import services
from portal.contributions.models import ProblemProposal
from portal.contributions.reaper import proposals_reap
from problems.registry import PROBLEMS_ROOT

EXAMPLE = PROBLEMS_ROOT / "collectives" / "all_reduce"


@pytest.fixture
def proposal(user, redis_conn, django_capture_on_commit_callbacks) -> ProblemProposal:
    with django_capture_on_commit_callbacks(execute=True):
        return services.proposal_create(
            user=user,
            category="collectives",
            name="sum_over_ranks",
            **{field: (EXAMPLE / name).read_text() for name, field in services.FILE_FIELDS.items()},
        )


def _later() -> timezone.datetime:
    return timezone.now() + timedelta(seconds=settings.ARENA_REAP_GRACE_S + 1)


def test_a_lost_check_is_queued_again_then_failed_after_the_last_attempt(
    proposal, redis_conn, django_capture_on_commit_callbacks
):
    queue = Queue(CHECKS_QUEUE, connection=redis_conn)
    for attempt in range(1, settings.ARENA_MAX_ENQUEUES + 1):
        proposal.refresh_from_db()
        assert (proposal.state, proposal.check_job_id) == ("submitted", f"proposal-{proposal.pk}-{attempt}")
        queue.empty()  # Redis loses the job (and its hash)
        with django_capture_on_commit_callbacks(execute=True):
            report = proposals_reap(now=_later())
        if attempt < settings.ARENA_MAX_ENQUEUES:
            assert report.requeued == [proposal.pk]
            assert queue.get_job_ids() == [f"proposal-{proposal.pk}-{attempt + 1}"]
    assert report.failed == [proposal.pk]
    proposal.refresh_from_db()
    assert proposal.state == "failed" and "lost from the queue" in proposal.check_report["message"]
    assert f"Check {settings.ARENA_MAX_ENQUEUES} of {settings.ARENA_MAX_ENQUEUES}" in proposal.check_report["message"]


def test_a_check_job_that_died_fails_the_proposal_with_the_reason(proposal, redis_conn):
    job = Job.fetch(proposal.check_job_id, connection=redis_conn)
    Queue(CHECKS_QUEUE, connection=redis_conn).remove(job)
    job.set_status(JobStatus.FAILED)  # it outlived its limit, or its worker stopped it
    assert proposals_reap().checked == 0  # a row changed within the grace period is left alone
    report = proposals_reap(now=_later())
    assert report.failed == [proposal.pk]
    proposal.refresh_from_db()
    assert proposal.state == "failed" and "the check job did not finish" in proposal.check_report["message"]


def test_the_reap_command_reports_on_proposal_checks(db, redis_conn):
    out = io.StringIO()
    call_command("reap", verbosity=2, stdout=out)
    assert "proposal checks: checked 0" in out.getvalue() and "checked 0" in out.getvalue().splitlines()[0]


def test_one_reap_pass_covers_every_kind_of_queued_work_through_the_one_lifecycle_reaper(db, redis_conn):
    from leaderboard.lifecycle.reaper import Reaper
    from leaderboard.models import Submission, TestRun
    from portal.management.commands.reap import REAPERS

    assert all(isinstance(reaper, Reaper) for reaper in REAPERS)
    assert sorted(reaper.work.model.__name__ for reaper in REAPERS) == sorted(
        model.__name__ for model in (Submission, TestRun, ProblemProposal)
    )
    out = io.StringIO()
    call_command("reap", verbosity=2, stdout=out)
    assert len(out.getvalue().splitlines()) == len(REAPERS)  # one report a kind, nothing reaped twice
