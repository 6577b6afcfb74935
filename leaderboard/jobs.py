"""RQ jobs on the "web" queue. Workers of every hardware profile send these; they carry ids and plain data
and call a service, nothing more. Run them with ``python manage.py rqworker web``."""

from __future__ import annotations

from typing import Any

from leaderboard import services


def mark_running(submission_id: int, worker_name: str, started_at_epoch: float) -> None:
    services.submission_mark_running(submission_id=submission_id, worker=worker_name, started_at=started_at_epoch)


def record_result(submission_id: int, document: dict[str, Any]) -> None:
    services.result_record(submission_id=submission_id, document=document)
