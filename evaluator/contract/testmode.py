"""Test mode: an unranked evaluation a solution's author runs while developing it (``POST /api/tests/``,
``arena test``).

The same sandbox and judge as a ranked evaluation, with fewer correctness trials and, when asked for, quick timing
(fewer iterations than a ranked result: the figures are marked as such and never compared with ranked ones). What
comes back is the ordinary result document plus a ``test`` block saying so, and ``diagnostics``: the lines of the
solution (or of the sources it compiles) that a compiler or a traceback named, so a reader, or a program in a loop,
can go straight to them. Standard library only: the portal, the workers and the CLI share it.
"""

from __future__ import annotations

import re
from typing import Any

from evaluator.contract.result import Verdict
from evaluator.contract.spec import EvalSpec

TEST_TRIALS = 3  # correctness trials of a test (a ranked evaluation runs 5)
# (timed iterations, warm-up iterations) of quick timing per device; ranked evaluations run (20, 3) on CPU and
# (100, 10) on GPUs (evaluator/host/plan.py ITERATIONS).
QUICK_ITERATIONS = {"cpu": (5, 1), "cuda": (20, 3)}
TEST_TIMEOUTS = {"setup": 120.0, "correctness": 60.0, "timing": 60.0}
DIAGNOSTICS_LIMIT = 20


def test_spec(
    *,
    problem_id: str,
    source: str,
    profile: str,
    device: str,
    solution_name: str = "solution.py",
    problem_version: int | None = None,
    problem_hash: str | None = None,
    timing: bool = False,
    seed: int | None = None,
) -> EvalSpec:
    """The spec of one test: ``device`` is the profile's ("cpu" or "cuda"), which picks the quick iterations."""
    iterations, warmup = QUICK_ITERATIONS.get(device, QUICK_ITERATIONS["cuda"])
    return EvalSpec(
        problem_id=problem_id,
        solution_source=source,
        profile=profile,
        solution_name=solution_name,
        problem_version=problem_version,
        problem_hash=problem_hash,
        trials=TEST_TRIALS,
        timing_iterations=iterations if timing else None,
        warmup_iterations=warmup if timing else None,
        timeouts=dict(TEST_TIMEOUTS),
        measure_timing=timing,
        seed=seed,
    )


# `File "/solution/solution.py", line 12, in solution` (tracebacks); `main.cpp:12:5: error: ...` (gcc, clang);
# `cuda.cu(12): error: ...` (nvcc); `SyntaxError: ... (solution.py, line 12)` (the one-line message of a SyntaxError).
_TRACEBACK = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<where>\S+))?')
_GCC = re.compile(
    r"^(?P<file>[^\s:()]+\.(?:cpp|cc|cu|cuh|h|hpp|c)):(?P<line>\d+):(?:(?P<col>\d+):)?\s*"
    r"(?P<level>fatal error|error|warning):\s*(?P<text>.*)$",
    re.M,
)
_NVCC = re.compile(
    r"^(?P<file>[^\s:()]+\.(?:cu|cuh|cpp|h))\((?P<line>\d+)\):\s*(?P<level>error|warning)[^:]*:\s*"
    r"(?P<text>.*)$",
    re.M,
)
_SYNTAX = re.compile(r"\((?P<file>[^(),]+\.py), line (?P<line>\d+)\)")
# `the static check refused the solution: line 2: imports problems...` (evaluator/analysis/static_checks.py)
_STATIC = re.compile(
    r"static check refused the solution: line (?P<line>\d+): (?P<text>.*?)(?: \(and \d+ more\))?$", re.M
)


def diagnostics(document: dict[str, Any], solution_name: str = "solution.py") -> list[dict[str, Any]]:
    """The source lines a failed evaluation's message, traceback and logs name, most useful first: the solution
    file's own lines (from tracebacks and syntax errors), then compiler errors in the sources it builds."""
    texts = [str(document.get("message") or ""), str(document.get("traceback") or "")]
    texts += [str(v) for v in (document.get("logs") or {}).values()]
    name = solution_name.rsplit("/", 1)[-1]
    found: list[dict[str, Any]] = []
    seen: set[tuple[Any, Any, Any]] = set()

    def add(item: dict[str, Any]) -> None:
        key = (item["file"], item["line"], item.get("text", ""))
        if key not in seen and len(found) < DIAGNOSTICS_LIMIT:
            seen.add(key)
            found.append(item)

    for m in _STATIC.finditer(texts[0]):
        add({"file": name, "line": int(m["line"]), "kind": "error", "text": m["text"][:300]})
    for text in texts:
        for m in _SYNTAX.finditer(text):
            if m["file"].rsplit("/", 1)[-1] == name:
                add({"file": name, "line": int(m["line"]), "kind": "syntax", "text": text.splitlines()[0][:300]})
        for m in _TRACEBACK.finditer(text):
            if m["file"].rsplit("/", 1)[-1] == name:
                if not m["where"] and any(d["file"] == name and d["line"] == int(m["line"]) for d in found):
                    continue  # a syntax error's frame (no function): its line is already there, with the error
                add({"file": name, "line": int(m["line"]), "kind": "traceback", "text": m["where"] or "raised here"})
    for text in texts:
        for pattern in (_GCC, _NVCC):
            for m in pattern.finditer(text):
                add(
                    {
                        "file": m["file"].rsplit("/", 1)[-1],
                        "line": int(m["line"]),
                        "kind": m["level"].replace("fatal error", "error"),
                        "text": m["text"].strip()[:300],
                    }
                )
    return found


def annotate(document: dict[str, Any], spec: EvalSpec) -> dict[str, Any]:
    """Marks a result document as a test's: unranked, its trials, whether and how briefly it was timed, and the
    diagnostics of a failure."""
    document["test"] = {
        "ranked": False,
        "trials": spec.trials,
        "quick_timing": bool(spec.measure_timing),
        "timing_iterations": spec.timing_iterations if spec.measure_timing else 0,
        "warmup_iterations": spec.warmup_iterations if spec.measure_timing else 0,
        "note": (
            "an unranked test: quick timing (fewer iterations than a ranked evaluation), not comparable with "
            "ranked results"
            if spec.measure_timing
            else "an unranked test: correctness only, not timed"
        ),
    }
    if isinstance(document.get("timing"), dict) and spec.measure_timing:
        document["timing"]["quick"] = True
    document["diagnostics"] = (
        diagnostics(document, spec.solution_name) if document.get("verdict") not in (Verdict.PASSED.value, None) else []
    )
    return document
