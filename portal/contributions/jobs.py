"""RQ jobs on the "web" queue that the check worker (``evaluator.problem_check``) sends back; they carry ids and
plain data and call a service, nothing more. Each is signed by the check worker for the proposal, the check job
issued and its nonce (``leaderboard.submissions.signatures``); anything else is refused and logged."""

from __future__ import annotations

from typing import Any

from evaluator.contract.jobs import MARK_CHECKING, RECORD_CHECK
from leaderboard.submissions.signatures import verified
from portal.contributions import services


def proposal_mark_checking(proposal_id: int, job_id: str, worker_name: str, nonce: str, signature: str) -> None:
    if verified(MARK_CHECKING, proposal_id, job_id, nonce, {"worker": worker_name}, signature):
        services.proposal_mark_checking(proposal_id=proposal_id, job_id=job_id, worker=worker_name)


def proposal_record_check(proposal_id: int, job_id: str, report: dict[str, Any], nonce: str, signature: str) -> None:
    if verified(RECORD_CHECK, proposal_id, job_id, nonce, report, signature):
        services.proposal_record_check(proposal_id=proposal_id, job_id=job_id, report=report)
