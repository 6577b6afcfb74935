"""The reaper of proposal checks: the same failure path evaluations have (``leaderboard.submissions.reaper``).

The database says which proposals are being checked (``submitted`` or ``checking``, with the id of their current
check job); Redis says what became of that job. Every disagreement is settled once: a check whose job was lost, or
whose worker stopped sending heartbeats, is a platform failure (``services.proposal_check_failed``: checked again
while it has attempts left, ``failed`` after the last); a job that failed or was stopped (a reference that outlived
the job's limit, a worker that stopped it) ends the proposal ``failed`` with the reason; a job that finished but
whose report never arrived has its report recovered from the job's return value. Safe to run at any time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import django_rq
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from evaluator.contract.jobs import CHECKS_QUEUE, RECORD_CHECK
from leaderboard.beyond_contract import failed_report
from leaderboard.submissions.reaper import job_abandoned, job_failure
from leaderboard.submissions.signatures import signed_envelope
from portal.contributions import services
from portal.contributions.models import ProblemProposal

logger = logging.getLogger(__name__)


@dataclass
class ProposalReapReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    checked: int = 0

    def __str__(self) -> str:
        return (f"proposal checks: checked {self.checked}: re-enqueued {self.requeued or 'none'}, failed "
                f"{self.failed or 'none'}, recovered reports of {self.recovered or 'none'}")


def _job(proposal: ProblemProposal) -> Job | None:
    if not proposal.check_job_id:
        return None
    try:
        return Job.fetch(proposal.check_job_id, connection=django_rq.get_connection(CHECKS_QUEUE),
                         serializer=JSONSerializer)
    except NoSuchJobError:
        return None


def _platform_failure(proposal: ProblemProposal, message: str, report: ProposalReapReport) -> None:
    outcome = services.proposal_check_failed(proposal_id=proposal.pk, job_id=proposal.check_job_id, message=message)
    if outcome == "requeued":
        report.requeued.append(proposal.pk)
    elif outcome == "failed":
        report.failed.append(proposal.pk)


def _reap_one(proposal: ProblemProposal, now: datetime, grace: timedelta, report: ProposalReapReport) -> None:
    job = _job(proposal)
    if job is None:
        if proposal.state == ProblemProposal.State.SUBMITTED:
            _platform_failure(proposal, "the check job was lost from the queue before a worker took it (Redis "
                                        "restarted or dropped it)", report)
        elif now - proposal.updated_at > timedelta(seconds=services.CHECK_JOB_TIMEOUT_S) + grace:
            who = f"the check worker {proposal.check_worker}" if proposal.check_worker else "the check worker"
            _platform_failure(proposal, f"{who} started this check and never reported; Redis no longer knows its job",
                              report)
        return
    status = job.get_status(refresh=False)
    if status == JobStatus.FINISHED:
        if job.ended_at and now - job.ended_at < grace:
            return  # its report is probably still on the web queue
        value = signed_envelope(RECORD_CHECK, proposal.pk, job.return_value(), "report")  # the worker's, signed
        if isinstance(value, dict):
            services.proposal_record_check(proposal_id=proposal.pk, job_id=job.id, report=value)
            report.recovered.append(proposal.pk)
        else:
            _platform_failure(proposal, "the check job finished but its report was lost", report)
    elif status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        services.proposal_record_check(proposal_id=proposal.pk, job_id=job.id, report=failed_report(
            f"the check job did not finish ({job_failure(job)}); a reference that runs longer than the job's limit "
            f"or never returns ends here"))
        report.failed.append(proposal.pk)
    elif status == JobStatus.STARTED:
        if job_abandoned(job, now):
            _platform_failure(proposal, "the check worker stopped sending heartbeats (it was killed, or its host "
                                        "went down)", report)
        elif proposal.state == ProblemProposal.State.SUBMITTED:  # the worker's "checking" message was lost or is late
            services.proposal_mark_checking(proposal_id=proposal.pk, job_id=job.id, worker=job.worker_name or "")
    elif status == JobStatus.QUEUED and proposal.state == ProblemProposal.State.SUBMITTED:
        if job.id not in django_rq.get_queue(CHECKS_QUEUE).get_job_ids():
            job.delete()  # its hash survived but the queue lost it
            _platform_failure(proposal, "the check job was lost from the queue before a worker took it", report)
    # scheduled or deferred: RQ holds it and will queue it


def proposals_reap(*, now: datetime | None = None) -> ProposalReapReport:
    """Settles every proposal being checked whose job Redis lost, whose worker died, or whose job ended without a
    report, as the module's doc says. Proposals changed within the grace period are left for the next pass."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.ARENA_REAP_GRACE_S)
    report = ProposalReapReport()
    checking = ProblemProposal.objects.filter(state__in=[ProblemProposal.State.SUBMITTED,
                                                         ProblemProposal.State.CHECKING],
                                              updated_at__lt=now - grace)
    for proposal in checking.order_by("id"):
        report.checked += 1
        with transaction.atomic():  # what it enqueues goes to Redis when this commits
            _reap_one(proposal, now, grace, report)
    return report
