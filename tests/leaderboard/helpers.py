"""Shared bits of the leaderboard tests: known-answer solutions and result documents."""

from __future__ import annotations

from pathlib import Path

from evaluator.contract.result import empty_document

ROOT = Path(__file__).resolve().parents[2]
ALL_REDUCE = "collectives/all_reduce"
CORRECT = ROOT / "problems/collectives/all_reduce/solutions/correct/nccl_inplace_copy.py"
WRONG = ROOT / "problems/collectives/all_reduce/solutions/wrong/off_on_one_rank.py"


def passed_document(speedup: float, *, version: int = 1, problem_id: str = ALL_REDUCE) -> dict:
    doc = empty_document()
    doc.update(
        verdict="passed",
        message=f"correct; {speedup:.3f}× the baseline",
        problem={"id": problem_id, "version": version, "content_hash": "h" * 64},
        timing={
            "method": "test",
            "baseline": {"median_us": 100.0 * speedup},
            "solution": {"median_us": 100.0},
            "speedup": speedup,
            "speedup_ci": [speedup * 0.95, speedup * 1.05],
        },
        roofline={"time_us": 10.0, "baseline_fraction": 0.1 / speedup, "solution_fraction": 0.1},
    )
    return doc


def failed_document(verdict: str = "wrong_output", message: str = "trial 0, rank 1: wrong") -> dict:
    doc = empty_document()
    doc.update(
        verdict=verdict,
        message=message,
        failed_ranks=[1],
        trials=[
            {"trial": 0, "ranks": [{"rank": 0, "ok": True, "error": None}, {"rank": 1, "ok": False, "error": "wrong"}]}
        ],
    )
    return doc


def signed_reply(kind: str, row_id: int, job_id: str, body: dict) -> tuple[str, str]:
    """The nonce the portal bound to ``job_id`` and a worker's signature over ``body`` (the tests' worker key)."""
    from evaluator.contract import signing
    from leaderboard.lifecycle.signatures import nonce_for
    from tests.conftest import TEST_WORKER_KEY

    nonce = nonce_for(job_id)
    key = (signing.DEFAULT_KEY_ID, TEST_WORKER_KEY.encode())
    return nonce, signing.sign(kind, row_id, job_id, nonce, body, key=key)


def signed_return(submission_id: int, job_id: str, document: dict) -> dict:
    """What an evaluation job returns (``evaluator.host.jobs.signed_result``): the document signed for its job."""
    from evaluator.contract.jobs import RECORD_RESULT

    nonce, signature = signed_reply(RECORD_RESULT, submission_id, job_id, document)
    return {"document": document, "job_id": job_id, "nonce": nonce, "signature": signature}
