"""RQ jobs on the "web" queue that the check worker (``evaluator.checks.problem_check``) sends back; they carry ids and
plain data and call a service, nothing more, as lifecycle replies (``leaderboard.lifecycle.replies.reply``): each is
signed by the check worker for the proposal, the check job issued and its nonce; anything else is refused and logged."""

from __future__ import annotations

from typing import Any

from evaluator.contract.jobs import MARK_CHECKING, RECORD_CHECK
from leaderboard.lifecycle.replies import reply
from portal.contributions import services


def proposal_mark_checking(proposal_id: int, job_id: str, worker_name: str, nonce: str, signature: str) -> None:
    reply(
        MARK_CHECKING,
        proposal_id,
        job_id,
        nonce,
        {"worker": worker_name},
        signature,
        lambda: services.proposal_mark_checking(proposal_id=proposal_id, job_id=job_id, worker=worker_name),
    )


def proposal_record_check(proposal_id: int, job_id: str, report: dict[str, Any], nonce: str, signature: str) -> None:
    reply(
        RECORD_CHECK,
        proposal_id,
        job_id,
        nonce,
        report,
        signature,
        lambda: services.proposal_record_check(proposal_id=proposal_id, job_id=job_id, report=report),
    )
