"""The reaper of proposal checks: the lifecycle's one reaper (``leaderboard.lifecycle.reaper``) with a check's hooks.

The database says which proposals are being checked (``submitted`` or ``checking``, with the id of their current
check job); Redis says what became of that job. A check whose job was lost, or whose worker stopped sending
heartbeats, is a platform failure (``services.proposal_check_failed``: checked again while it has attempts left,
``failed`` after the last); a job that failed or was stopped (a reference that outlived the job's limit, a worker that
stopped it) ends the proposal ``failed`` with the reason; a job that finished but whose report never arrived has its
report recovered from the job's return value. Proposals changed within the grace period are left for the next pass.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable

from rq.job import Job

from evaluator.contract.jobs import RECORD_CHECK
from leaderboard.beyond_contract import failed_report
from leaderboard.lifecycle.reaper import Reaper, ReapReport, job_failure
from portal.contributions import services
from portal.contributions.models import ProblemProposal


class CheckReaper(Reaper[ProblemProposal]):
    work = services.CHECK
    reply, reply_body = RECORD_CHECK, "report"
    job_noun, reply_noun = "check job", "report"

    def rows(self, now: datetime, grace: timedelta) -> Iterable[ProblemProposal]:
        return ProblemProposal.objects.filter(
            state__in=[ProblemProposal.State.SUBMITTED, ProblemProposal.State.CHECKING], updated_at__lt=now - grace
        ).order_by("id")

    def last_sign(self, row: ProblemProposal) -> datetime:
        return row.updated_at

    def limit_s(self, row: ProblemProposal) -> int:
        return services.CHECK_JOB_TIMEOUT_S

    def fail_attempt(self, row: ProblemProposal, message: str, report: ReapReport) -> None:
        outcome = services.proposal_check_failed(proposal_id=row.pk, job_id=row.check_job_id, message=message)
        if outcome == "requeued":
            report.requeued.append(row.pk)
        elif outcome == "failed":
            report.failed.append(row.pk)

    def recover(self, row: ProblemProposal, job: Job, body: dict[str, Any], report: ReapReport) -> None:
        services.proposal_record_check(proposal_id=row.pk, job_id=job.id, report=body)
        report.recovered.append(row.pk)

    def job_ended(self, row: ProblemProposal, job: Job, status: Any, report: ReapReport) -> None:
        """Not retried: what stops a check's job (its limit, most often) would stop it again."""
        services.proposal_record_check(
            proposal_id=row.pk, job_id=job.id, report=failed_report(self.says_ended(row, job, status))
        )
        report.failed.append(row.pk)

    def describe(self, report: ReapReport) -> str:
        return (
            f"proposal checks: checked {report.checked}: re-enqueued {report.requeued or 'none'}, failed "
            f"{report.failed or 'none'}, recovered reports of {report.recovered or 'none'}"
        )

    def says_silent(self, row: ProblemProposal, now: datetime) -> str:
        who = f"the check worker {row.check_worker}" if row.check_worker else "the check worker"
        return f"{who} started this check and never reported; Redis no longer knows its job"

    def says_ended(self, row: ProblemProposal, job: Job, status: Any) -> str:
        return (
            f"the check job did not finish ({job_failure(job)}); a reference that runs longer than the job's limit "
            f"or never returns ends here"
        )

    def says_abandoned(self, row: ProblemProposal, job: Job) -> str:
        return "the check worker stopped sending heartbeats (it was killed, or its host went down)"


CHECKS = CheckReaper()


def proposals_reap(*, now: datetime | None = None) -> ReapReport:
    """Settles every proposal being checked whose job Redis lost, whose worker died, or whose job ended without a
    report (:class:`CheckReaper`)."""
    return CHECKS.reap(now=now)
