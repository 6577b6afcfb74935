"""Checks a proposed problem (a contribution under review) on CPU: the folder is written to a temporary directory,
validated by the registry, its reference proved equal to its oracle at world sizes 2 and 4 (those it supports) by
:func:`evaluator.selfcheck.check_problem`, and each known answer run against the oracle: correct ones must pass at
every size, wrong ones must fail at the largest (the same rule as ``tests/problems``).

Like :mod:`evaluator.jobs`, the job never touches the database: it runs on the ``checks`` queue and reports back by
enqueueing signed jobs on the web side's queue. The contributor's ``reference.py`` is code nobody has reviewed yet: the
job runs :func:`check_folder` only inside the sandbox (``evaluator.host.check``), never in the worker's own processes,
and the worker serving ``checks`` holds no database credentials and no Django settings, as GPU hosts do.
"""

from __future__ import annotations

import platform
import re
import time
from pathlib import Path
from typing import Any

from evaluator.contract.jobs import MARK_CHECKING, RECORD_CHECK, WEB_QUEUE

CHECK_WORLD_SIZES = (2, 4)
COLLECTIVE_TIMEOUT_S = 60  # a reference that deadlocks fails after this long instead of holding the worker
REPORT_VERSION = 1
FILES = ("problem.toml", "reference.py", "README.md")
KINDS = ("correct", "wrong")
SOLUTION_FILENAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.py$")


def write_folder(root: Path, category: str, name: str, files: dict[str, str],
                 solutions: list[dict[str, str]] = ()) -> Path:
    """Writes ``<root>/problems/<category>/<name>/`` with the three files and ``solutions/<kind>/<filename>``;
    returns the folder. Names must already be safe (the portal validates them; this refuses anything else)."""
    folder = Path(root) / "problems" / category / name
    if folder.resolve().parent.parent != (Path(root) / "problems").resolve():
        raise ValueError(f"unsafe problem id {category}/{name}")
    folder.mkdir(parents=True)
    for filename in FILES:
        (folder / filename).write_text(files[filename])
    for solution in solutions:
        if solution["kind"] not in KINDS or not SOLUTION_FILENAME.match(solution["filename"]):
            raise ValueError(f"unsafe known answer {solution['kind']}/{solution['filename']}")
        path = folder / "solutions" / solution["kind"] / solution["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(solution["source"])
    return folder


def check_folder(folder: Path, world_sizes: tuple[int, ...] = CHECK_WORLD_SIZES) -> dict[str, Any]:
    """The check report of one problem folder (written by :func:`write_folder`), as JSON-serialisable data:
    ``ok``, ``message`` (the first reason it failed, or a summary), ``reference`` (one entry per world size),
    ``known_answers`` (one entry per file and world size), ``warnings``."""
    from evaluator.selfcheck import check_problem
    from problems.registry import ProblemError, load_problem

    started = time.monotonic()
    report: dict[str, Any] = {"version": REPORT_VERSION, "ok": False, "message": "", "problem_id": None,
                              "world_sizes": [], "reference": [], "known_answers": [], "warnings": [],
                              "environment": _environment()}
    try:
        problem = load_problem(folder, folder.parent.parent)
    except ProblemError as exc:
        report["message"] = str(exc)
        return _finish(report, started)
    report["problem_id"] = problem.id
    sizes = [w for w in world_sizes if w in problem.world_sizes]
    report["world_sizes"] = sizes
    if not sizes:
        report["message"] = (f"problem.toml: 'world_sizes' lists {list(problem.world_sizes)}; it must include "
                             f"{' or '.join(map(str, world_sizes))} so the reference can be checked on CPU.")
        return _finish(report, started)

    failures: list[str] = []
    for w in sizes:
        errors = _errors(lambda: check_problem(problem, w, timeout_s=COLLECTIVE_TIMEOUT_S), "reference")
        report["reference"].append({"world_size": w, "ok": not errors, "errors": errors})
        if errors:
            failures.append(f"at W={w}, {errors[0]}")

    for kind in KINDS:
        for path in sorted((folder / "solutions" / kind).glob("*.py")):
            for w in sizes:
                errors = _errors(lambda: check_problem(problem, w, solution_path=path,
                                                       timeout_s=COLLECTIVE_TIMEOUT_S), "solution")
                # correct: must pass at every size; wrong: must fail at the largest (a bug may need 4 ranks to
                # show), the smaller sizes are shown for information only
                counts = kind == "correct" or w == sizes[-1]
                ok = not counts or (not errors if kind == "correct" else bool(errors))
                report["known_answers"].append({"kind": kind, "filename": path.name, "world_size": w,
                                                "passed_oracle": not errors, "counts": counts, "ok": ok,
                                                "errors": errors})
                if not ok and kind == "correct":
                    failures.append(f"known answer correct/{path.name} fails at W={w}: {errors[0]}")
                elif not ok:
                    failures.append(f"known answer wrong/{path.name} passes at W={w}: the checks do not catch it; "
                                    f"make the inputs or the tolerance stricter")
    kinds_given = {a["kind"] for a in report["known_answers"]}
    for kind in KINDS:
        if kind not in kinds_given:
            report["warnings"].append(f"no {kind} known answer was given; the catalogue's tests need at least one "
                                      f"solutions/{kind}/*.py before the folder can be merged")
    report["ok"] = not failures
    report["message"] = failures[0] if failures else (
        f"the reference equals the oracle at W={', '.join(map(str, sizes))}"
        + (f"; {len(report['known_answers'])} known-answer runs behaved as labelled" if report["known_answers"]
           else ""))
    if len(failures) > 1:
        report["message"] += f" (and {len(failures) - 1} more problem{'s' if len(failures) > 2 else ''})"
    return _finish(report, started)


def _errors(run, who: str) -> list[str]:
    """The self-check's errors, or the exception it raised (in make_inputs, oracle...) as one error."""
    try:
        return list(run().errors)
    except Exception as exc:  # the contributor's code raised in this process (make_inputs, oracle, import)
        return [f"{who} check raised {type(exc).__name__}: {str(exc)[:1500]}"]


def _environment() -> dict[str, str]:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "backend": "gloo (CPU)",
            "host": platform.node()}


def _finish(report: dict[str, Any], started: float) -> dict[str, Any]:
    report["duration_s"] = round(time.monotonic() - started, 3)
    return report


def failed_report(message: str) -> dict[str, Any]:
    """A report for a check that could not run to the end (the job raised, timed out or its worker died)."""
    return {"version": REPORT_VERSION, "ok": False, "message": message, "problem_id": None, "world_sizes": [],
            "reference": [], "known_answers": [], "warnings": [], "duration_s": None}


# --- RQ -------------------------------------------------------------------------------------------------


def signed_report(proposal_id: int, report: dict[str, Any], job_id: str, nonce: str) -> dict[str, Any]:
    """The report with the worker's signature over it, this proposal, the job issued and its nonce (what the web side
    records, and what the reaper recovers from a finished job)."""
    from evaluator.contract import signing

    return {"report": report, "job_id": job_id, "nonce": nonce,
            "signature": signing.sign(RECORD_CHECK, proposal_id, job_id, nonce, report)}


def check_proposal_job(proposal_id: int, category: str, name: str, files: dict[str, str],
                       solutions: list[dict[str, str]], nonce: str) -> dict[str, Any]:
    """Runs on the ``checks`` queue: checks one proposal in the sandbox and sends the signed report to the web side.

    The report is sent even when the check itself breaks, so the proposal does not stay ``checking``."""
    from rq import Queue, get_current_job
    from rq.serializers import JSONSerializer

    from evaluator.contract import signing
    from evaluator.host.check import check_sandboxed

    job = get_current_job()
    queue = None if job is None else Queue(WEB_QUEUE, connection=job.connection, serializer=JSONSerializer)
    job_id = job.id if job else ""
    if queue is not None:
        worker = (job.worker_name or "")[:200]
        queue.enqueue(MARK_CHECKING, proposal_id, job_id, worker, nonce,
                      signing.sign(MARK_CHECKING, proposal_id, job_id, nonce, {"worker": worker}))
    try:
        report = check_sandboxed(category, name, files, solutions)
    except Exception as exc:  # the checker's own failure
        report = failed_report(f"the check could not run: {type(exc).__name__}: {exc}")
    signed = signed_report(proposal_id, report, job_id, nonce)
    if queue is not None:
        queue.enqueue(RECORD_CHECK, proposal_id, job_id, report, nonce, signed["signature"])
    return signed
