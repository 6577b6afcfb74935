"""A model run whose attempts have known verdicts, and the scores worked out by hand for it.

The run (zero-shot, k=3, h200-nvlink-2: a profile that measures speed) and its results (pre-made documents, no
evaluation):

    problem                          attempt 1            attempt 2            attempt 3
    collectives/all_reduce           passed 1.8 rf 0.50   passed 1.2 rf 0.25   wrong_output
    collectives/all_gather           wrong_output         compile_error        timeout
    collectives/broadcast            passed 0.8 rf 0.10   passed 1.3 rf 0.40   runtime_error
    tensor-parallel/tp_mlp           passed 3.0 rf 0.60   infra_error          passed 1.1 rf 0.20

At k=3 (every problem has n = k = 3 counted attempts except tp_mlp, whose infra error leaves n=2 < 3: not
scorable, so it enters no mean):
    pass@3      all_reduce 1 (c=2), all_gather 0, broadcast 1 (c=2)        mean (1 + 0 + 1) / 3 = 2/3
    fast_1@3    all_reduce 1 (1.8, 1.2), all_gather 0, broadcast 1 (1.3)   mean 2/3
    fast_1.5@3  all_reduce 1 (1.8), all_gather 0, broadcast 0              mean 1/3
    fast_2@3    nobody is over 2× on a scorable problem                    mean 0
    geomean     over the correct attempts of scorable problems: (1.8 · 1.2 · 0.8 · 1.3)^(1/4) = 2.2464^(1/4)
    roofline    (0.50 + 0.25 + 0.10 + 0.40) / 4 = 0.3125
pass@1 (k=1: tp_mlp's n=2 ≥ 1 makes it scorable): (2/3 + 0 + 2/3 + 2/2) / 4 = 7/12.
Per category: collectives pass@3 2/3 over 3 problems; tensor-parallel 0 problems scored (tp_mlp not scorable).
"""

from __future__ import annotations

from evaluator.contract.result import empty_document
from leaderboard.model_runs.services import model_run_create
from leaderboard.rankings.services import run_score_refresh_stale
from leaderboard.submissions.results import result_record
from leaderboard.model_runs.writer import build_archive
from tests.leaderboard.helpers import CORRECT, WRONG

MANIFEST = {
    "model": "handworked-coder",
    "provider": "Test Labs",
    "protocol": "zero-shot",
    "k": 3,
    "turn_budget": 0,
    "tokens": 120_000,
    "wall_time_s": 720,
    "hardware": "h200-nvlink-2",
    "date": "2026-11-29",
    "open_weights": True,
    "precision": "fp32",
    "notes": "fixture run with hand-worked scores",
}
PROTOCOL_LABEL = "zero-shot · k=3 · 120k tokens · 12 min"

OUTCOMES = {
    ("collectives/all_reduce", 1): ("passed", 1.8, 0.50),
    ("collectives/all_reduce", 2): ("passed", 1.2, 0.25),
    ("collectives/all_reduce", 3): ("wrong_output", None, None),
    ("collectives/all_gather", 1): ("wrong_output", None, None),
    ("collectives/all_gather", 2): ("compile_error", None, None),
    ("collectives/all_gather", 3): ("timeout", None, None),
    ("collectives/broadcast", 1): ("passed", 0.8, 0.10),
    ("collectives/broadcast", 2): ("passed", 1.3, 0.40),
    ("collectives/broadcast", 3): ("runtime_error", None, None),
    ("tensor-parallel/tp_mlp", 1): ("passed", 3.0, 0.60),
    ("tensor-parallel/tp_mlp", 2): ("infra_error", None, None),
    ("tensor-parallel/tp_mlp", 3): ("passed", 1.1, 0.20),
}

PASS_AT_K = 2 / 3
PASS_AT_1 = 7 / 12
FAST = {"1": 2 / 3, "1.5": 1 / 3, "2": 0.0}
GEOMEAN = (1.8 * 1.2 * 0.8 * 1.3) ** 0.25
ROOFLINE = 0.3125
# How the pages print them (the `percent` and `times` filters).
SHOWN = {
    "pass_at_k": "66.7 %",
    "pass_at_1": "58.3 %",
    "fast_1": "66.7 %",
    "fast_1_5": "33.3 %",
    "fast_2": "0.0 %",
    "speedup": f"{GEOMEAN:.3f}×",
    "roofline": "31.2 %",
}


def document(verdict: str, speedup: float | None, fraction: float | None, problem_id: str, version: int) -> dict:
    doc = empty_document()
    doc.update(
        verdict=verdict,
        message=f"{verdict} (pre-made for a test)",
        problem={"id": problem_id, "version": version, "content_hash": "h" * 64},
    )
    if speedup is not None:
        doc["timing"] = {
            "method": "test",
            "baseline": {"median_us": 100.0 * speedup},
            "solution": {"median_us": 100.0},
            "speedup": speedup,
            "speedup_ci": [speedup * 0.95, speedup * 1.05],
        }
        doc["roofline"] = {
            "time_us": 100.0 * fraction,
            "bound": "link",
            "solution_fraction": fraction,
            "baseline_fraction": fraction / speedup,
        }
    return doc


def archive_bytes(manifest: dict | None = None, outcomes: dict | None = None, **kwargs) -> bytes:
    """The fixture run's archive: correct source for attempts meant to pass, a wrong one otherwise (the source
    does not matter to these tests: their results are pre-made)."""
    outcomes = OUTCOMES if outcomes is None else outcomes
    attempts = {key: (CORRECT if value[0] == "passed" else WRONG).read_text() for key, value in outcomes.items()}
    trajectories = {("collectives/all_reduce", 1): '{"role": "user", "content": "write all_reduce"}\n'}
    return build_archive(MANIFEST if manifest is None else manifest, attempts, trajectories, **kwargs)


def make_run(user, *, outcomes: dict | None = None, manifest: dict | None = None, record: bool = True):
    """Uploads the fixture archive through the service and records the pre-made results."""
    run = model_run_create(
        user=user, filename="handworked.zip", data=archive_bytes(manifest=manifest, outcomes=outcomes)
    )
    if record:
        for submission in run.attempts.select_related("problem"):
            verdict, speedup, fraction = (outcomes or OUTCOMES)[submission.problem_id, submission.attempt]
            for _ in range(10):  # an infra_error is retried (re-enqueued) until the last allowed attempt
                if result_record(
                    submission_id=submission.pk,
                    document=document(verdict, speedup, fraction, submission.problem_id, submission.problem.version),
                ):
                    break
        # the web worker's job that recording asked for after its commit (a test's transaction never commits)
        run_score_refresh_stale(model_run_id=run.pk)
    run.refresh_from_db()
    return run
