"""What each job on a queue may carry: positional JSON arguments of known types, nothing else. A worker checks a
job against these before it runs it (``evaluator/host/worker.py``); a job whose function is not allowed on the queue it
came from, or whose payload does not match, is refused and logged, never executed."""

from __future__ import annotations

from typing import Any, Callable

from evaluator.contract import jobs
from evaluator.contract.spec import EvalSpec

MAX_TEXT = 1 << 20


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 62


def _str(limit: int = 200) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and len(v) <= limit


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


def _spec(v: Any) -> bool:
    if not isinstance(v, dict):
        return False
    try:
        EvalSpec.from_dict(v)
    except (TypeError, ValueError, KeyError):
        return False
    return True


def _files(v: Any) -> bool:
    return isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(t, str) and len(t) <= MAX_TEXT for k, t in v.items()
    )


def _solutions(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(s, dict) and set(s) == {"kind", "filename", "source"} and all(isinstance(x, str) for x in s.values())
        for s in v
    )


_NONCE = _str(64)
_SIGNATURE = _str(200)
_JOB_ID = _str(100)

# function -> the types of its positional arguments, in order
SHAPES: dict[str, tuple[Callable[[Any], bool], ...]] = {
    jobs.EVALUATE: (_spec, _int, _NONCE),
    jobs.PREBUILD: (_spec,),
    jobs.CHECK_PROPOSAL: (_int, _str(64), _str(100), _files, _solutions, _NONCE),
    jobs.MARK_RUNNING: (_int, _str(255), _number, _JOB_ID, _NONCE, _SIGNATURE),
    jobs.RECORD_RESULT: (_int, _dict, _JOB_ID, _NONCE, _SIGNATURE),
    jobs.MARK_CHECKING: (_int, _JOB_ID, _str(200), _NONCE, _SIGNATURE),
    jobs.RECORD_CHECK: (_int, _JOB_ID, _dict, _NONCE, _SIGNATURE),
    jobs.EVALUATE_TEST: (_spec, _int, _NONCE),
    jobs.TEST_MARK_RUNNING: (_int, _str(255), _number, _JOB_ID, _NONCE, _SIGNATURE),
    jobs.TEST_RECORD_RESULT: (_int, _dict, _JOB_ID, _NONCE, _SIGNATURE),
    jobs.COMPARISON_REFRESH: (_int, _int),
    jobs.RUN_SCORE_REFRESH: (_int,),
}


def allowed_on(queue: str) -> frozenset[str]:
    """The job functions a worker runs from ``queue``: replies on the web queue, checks on the checks queue,
    evaluations (and builds on the build queue) on a profile's queues."""
    if queue == jobs.WEB_QUEUE:
        return jobs.WEB_JOBS
    if queue == jobs.CHECKS_QUEUE:
        return frozenset({jobs.CHECK_PROPOSAL})
    if jobs.is_build_queue(queue):
        return frozenset({jobs.PREBUILD})
    return jobs.WORKER_JOBS - {jobs.CHECK_PROPOSAL, jobs.PREBUILD}


def refusal(queue: str, function: Any, args: Any, kwargs: Any) -> str | None:
    """Why this job may not run from ``queue``, or None when it may."""
    if not isinstance(function, str) or function not in allowed_on(queue):
        return f"job function {str(function)[:120]!r} is not allowed on queue {queue!r}"
    shape = SHAPES.get(function)
    if shape is None:
        return f"job function {function!r} has no payload shape in evaluator/contract/payloads.py"
    if kwargs:
        return f"{function}: keyword arguments are not part of its payload"
    if not isinstance(args, (list, tuple)) or len(args) != len(shape):
        got = len(args) if isinstance(args, (list, tuple)) else repr(args)
        return f"{function}: expected {len(shape)} arguments, got {got}"
    for i, (check, value) in enumerate(zip(shape, args)):
        if not check(value):
            return f"{function}: argument {i + 1} ({type(value).__name__}) does not match its contract type"
    return None
