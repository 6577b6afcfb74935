"""Which inputs an imported problem is evaluated on: trusted runs of the reference alone (no user code). What they
decide is recorded in the problem's ``probe.toml`` (evaluator/suites/pkb/evaluate.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from problems.registry import Problem, get

from evaluator.contract.result import Verdict
from evaluator.suites.pkb import PROBE_SEED, PROBE_TIMEOUTS


# Appended to the checkout's reference source to make the stand-in that a trusted run evaluates: the reference
# itself, as a solution, refusing non-finite outputs. It imports nothing of this project, so it passes the
# evaluator's static checks like any honest solution would.
_PROBE_WRAPPER = """

# --- appended by the evaluator (evaluator/suites/pkb/probe.py): the reference above, refusing NaN/Inf outputs ---
import torch as _arena_torch

_arena_reference_solution = solution


def solution(*inputs):
    out = _arena_reference_solution(*inputs)
    for t in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(t, _arena_torch.Tensor) and (t.is_floating_point() or t.is_complex()) and t.numel() \\
                and not bool(_arena_torch.isfinite(t).all()):
            raise FloatingPointError("the reference gives NaN or Inf on these inputs")
    return out
"""


def _probe_source(problem: Problem) -> str:
    """The stand-in's source: the checkout's reference file (read from the checkout, never stored here) plus
    the wrapper above."""
    from problems.imported import CheckoutChanged, ImportedProblem

    bound = ImportedProblem(problem.path)
    changed = bound.changed()
    if changed:
        raise CheckoutChanged(changed)
    return bound.reference_file.read_text(encoding="utf-8") + _PROBE_WRAPPER


@dataclass(frozen=True)
class ProbeOutcome:
    accepted: bool | None  # None: the run could not tell (the reference could not be loaded or run here)
    reason: str
    seconds: float


def probe_reference(
    problem_id: str, profile: str, inputs: str, timeouts: dict[str, float] | None = None
) -> ProbeOutcome:
    """Runs the imported reference alone (no user code) on ``inputs`` ("randomized" or "original") on
    ``profile``: accepted when it runs, gives finite outputs and agrees with itself."""
    from evaluator.host.evaluate import evaluate
    from evaluator.contract.spec import EvalSpec

    started = time.monotonic()
    spec = EvalSpec(
        problem_id=problem_id,
        solution_source=_probe_source(get(problem_id)),
        profile=profile,
        solution_name="reference_probe.py",
        trials=2,
        measure_timing=False,
        seed=PROBE_SEED,
        params={"inputs": inputs},
        timeouts=dict(timeouts or PROBE_TIMEOUTS),
    )
    doc = evaluate(spec, imported_inner=True)  # an evaluation of its own (the reference's), resolved by the host
    verdict, message = doc.get("verdict"), (doc.get("message") or "")[:300]
    seconds = round(time.monotonic() - started, 3)
    if verdict == Verdict.PASSED.value:
        return ProbeOutcome(True, "", seconds)
    if verdict in (Verdict.RUNTIME_ERROR.value, Verdict.TIMEOUT.value, Verdict.WRONG_OUTPUT.value):
        return ProbeOutcome(False, f"{verdict}: {message}", seconds)
    return ProbeOutcome(None, f"{verdict}: {message}", seconds)


def decide(problem_id: str, profile: str, timeouts: dict[str, float] | None = None) -> tuple[str, str, float]:
    """("randomized" | "original" | "undecided", why, seconds) from trusted reference-only runs on ``profile``."""
    rnd = probe_reference(problem_id, profile, "randomized", timeouts)
    if rnd.accepted is None:
        # A run that could not tell (a sandbox that did not start on a busy host, say) decides nothing, and what is
        # decided here is written into the problem: one more run before it is recorded as undecided.
        again = probe_reference(problem_id, profile, "randomized", timeouts)
        rnd = ProbeOutcome(again.accepted, again.reason, rnd.seconds + again.seconds)
    if rnd.accepted:
        return "randomized", "", rnd.seconds
    if rnd.accepted is None:
        return "undecided", f"the reference could not be run on {profile} ({rnd.reason})", rnd.seconds
    orig = probe_reference(problem_id, profile, "original", timeouts)
    seconds = rnd.seconds + orig.seconds
    if orig.accepted:
        return "original", f"the reference fails on random inputs ({rnd.reason})", seconds
    return (
        "undecided",
        (
            f"on {profile} the reference fails on original inputs too ({orig.reason}); "
            f"decided on the evaluation's profile"
        ),
        seconds,
    )
