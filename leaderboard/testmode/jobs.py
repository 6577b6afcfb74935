"""The web worker's replies for tests (``evaluator.contract.jobs.TEST_MARK_RUNNING``, ``TEST_RECORD_RESULT``): ids
and plain data in, one service call each, as lifecycle replies (``leaderboard.lifecycle.replies.reply``): signed by
the worker for the test, its job and the nonce bound to that job, like a submission's; an unsigned one is refused."""

from __future__ import annotations

from typing import Any

from evaluator.contract.jobs import TEST_MARK_RUNNING, TEST_RECORD_RESULT
from leaderboard.lifecycle.replies import reply
from leaderboard.testmode import services


def test_mark_running(
    test_id: int, worker_name: str, started_at_epoch: float, job_id: str, nonce: str, signature: str
) -> None:
    reply(
        TEST_MARK_RUNNING,
        test_id,
        job_id,
        nonce,
        {"worker": worker_name, "started": started_at_epoch},
        signature,
        lambda: services.test_run_mark_running(
            test_id=test_id, worker=worker_name, started_at=started_at_epoch, job_id=job_id
        ),
    )


def test_record_result(test_id: int, document: dict[str, Any], job_id: str, nonce: str, signature: str) -> None:
    reply(
        TEST_RECORD_RESULT,
        test_id,
        job_id,
        nonce,
        document,
        signature,
        lambda: services.test_run_record(test_id=test_id, document=document, job_id=job_id),
    )
