"""RQ jobs on the "web" queue that the check worker (``evaluator.problem_check``) sends back; they carry ids and
plain data and call a service, nothing more."""

from __future__ import annotations

from typing import Any

from portal.contributions import services


def proposal_mark_checking(proposal_id: int, job_id: str, worker_name: str) -> None:
    services.proposal_mark_checking(proposal_id=proposal_id, job_id=job_id, worker=worker_name)


def proposal_record_check(proposal_id: int, job_id: str, report: dict[str, Any]) -> None:
    services.proposal_record_check(proposal_id=proposal_id, job_id=job_id, report=report)
