"""PKB solution file names (`<id>_<name>_<backend>.py`) for uploads and model runs."""

from __future__ import annotations

import posixpath
import re
from typing import Iterable
from problems.registry import ProblemError, get

from evaluator.suites.pkb import SOURCE, DEFAULT_SUITE, BACKENDS


def _pkb_folder(problem_id: str) -> str | None:
    """``12_all_gather`` for a problem of an imported PKB suite, else None."""
    try:
        problem = get(problem_id)
    except ProblemError:
        return None
    meta = problem.imported
    if not meta or meta.get("source") != SOURCE:
        return None
    return problem_id.split("/", 1)[1]


def solution_filename_ok(problem_id: str, filename: str) -> str | None:
    """None when ``filename`` may be uploaded as a solution of ``problem_id``; otherwise the message to show.

    For an imported PKB problem ``pkb/<id>_<name>`` the checkout's own names ``<id>_<name>_<backend>.py``
    (backend cuda, triton or parallelkittens) are accepted, and so is any name that does not look like a PKB
    solution name (``solution.py``). A PKB name of another problem or an unknown backend is refused, since it
    most likely means the wrong file or the wrong problem. Other problems: always None (not this helper's
    business).
    """
    name = posixpath.basename((filename or "").replace("\\", "/")).strip()
    folder = _pkb_folder(problem_id)
    if folder is None or not name:
        return None
    number = folder.split("_", 1)[0]
    expected = ", ".join(f"{folder}_{b}.py" for b in BACKENDS)
    if name.startswith(folder + "_") and name.endswith(".py"):
        backend = name[len(folder) + 1 : -3]
        if backend in BACKENDS:
            return None
        return (
            f"{name!r} names the backend {backend!r}; {SOURCE} solution files for {problem_id} are named "
            f"{expected} (or use any other name, such as solution.py)"
        )
    m = re.match(r"^(\d+)_", name)
    if m and name.endswith(".py"):
        if m.group(1) != number:
            return (
                f"{name!r} is named for {SOURCE} problem {m.group(1)}, but this upload is for {problem_id} "
                f"(problem {number}); pick problem {m.group(1)}, or rename the file to one of {expected}"
            )
        return f"{name!r} does not match {problem_id}; name it one of {expected} (or solution.py)"
    return None


def problem_for_solution_filename(
    filename: str, problem_ids: Iterable[str] | None = None, suite: str = DEFAULT_SUITE
) -> str | None:
    """The imported problem a PKB solution file name belongs to (``12_all_gather_cuda.py`` -> ``pkb/12_all_gather``),
    among ``problem_ids`` (default: the catalogue's problems of ``suite``); None when it names none of them."""
    name = posixpath.basename((filename or "").replace("\\", "/")).strip()
    if problem_ids is None:
        from problems.registry import catalogue

        problem_ids = [pid for pid, p in catalogue().items() if p.suite == suite]
    for pid in problem_ids:
        s, _, folder = pid.partition("/")
        if s == suite and any(name == f"{folder}_{b}.py" for b in BACKENDS):
            return pid
    return None
