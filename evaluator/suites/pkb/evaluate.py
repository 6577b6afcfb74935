"""Evaluating a problem of an imported suite: picks its inputs, evaluates, says which inputs were used.

Registered with the host (``evaluator.host.suites``) for problems imported from ParallelKernelBench when this module is
imported (``evaluator.suites.installed`` does it for every entry point)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from evaluator.contract.result import Verdict, empty_document
from evaluator.contract.spec import EvalSpec
from evaluator.host import suites
from evaluator.suites.pkb import ORIGINAL_LABEL, SOURCE
from evaluator.suites.pkb.probe import decide, probe_reference, record_probe, recorded_decision
from problems.registry import Problem


_DECIDED_HERE: dict[tuple[str, str, str], tuple[str, str]] = {}


@suites.register(SOURCE)
def evaluate_imported(
    spec: EvalSpec, problem: Problem, workdir_parent: str | None = None, keep_workdir: bool = False
) -> dict[str, Any]:
    """``evaluator.host.evaluate.evaluate`` for a problem imported from ParallelKernelBench: picks randomized or
    original inputs (see ``evaluator.suites.pkb``'s docstring), evaluates, and says in ``doc["problem"]["inputs"]``
    which inputs were used."""
    from evaluator.host.evaluate import evaluate  # torch and the sandbox only when an evaluation runs
    from problems.imported import ImportedProblem

    started = time.monotonic()
    changed = ImportedProblem(problem.path).changed()
    if changed:
        doc = empty_document()
        doc["problem"] = {
            "id": problem.id,
            "version": problem.version,
            "content_hash": problem.content_hash,
            "suite": problem.suite,
            "imported": dict(problem.imported or {}),
        }
        doc["verdict"] = Verdict.INFRA_ERROR.value
        doc["message"] = f"this worker cannot evaluate {problem.id}: {changed}"
        return doc

    probe_seconds = 0.0
    requested = (spec.params or {}).get("inputs")
    probed_now = False
    if requested:
        mode, why = requested, "requested by the evaluation spec"
    else:
        mode, why = recorded_decision(problem, spec.profile)
        key = (problem.id, problem.content_hash, spec.profile)
        if mode is None and key in _DECIDED_HERE:
            mode, why = _DECIDED_HERE[key]
        if mode is None:
            mode, reason, probe_seconds = decide(problem.id, spec.profile, spec.timeouts)
            probed_now = True
            if mode == "undecided":  # the reference cannot run even on original inputs: let the run show it
                mode, why = "randomized", f"undecided: {reason}"
            else:
                why = f"decided at evaluation on {spec.profile}" + (f": {reason}" if reason else "")
                _DECIDED_HERE[key] = (mode, why)
                record_probe(problem.path, spec.profile, _preset_of(spec.profile), mode, reason)

    def run(inputs: str) -> dict[str, Any]:
        inner = dataclasses.replace(spec, params={**(spec.params or {}), "inputs": inputs})
        return evaluate(inner, workdir_parent, keep_workdir, imported_inner=True)

    doc = run(mode)
    failed = doc.get("verdict") in (Verdict.RUNTIME_ERROR.value, Verdict.TIMEOUT.value)
    if mode == "randomized" and not requested and not probed_now and failed:
        # Did the solution fail, or the reference on random values? Only a run without the solution can tell.
        outcome = probe_reference(problem.id, spec.profile, "randomized", spec.timeouts)
        probe_seconds += outcome.seconds
        if outcome.accepted is False:
            mode, why = (
                "original",
                f"decided at evaluation on {spec.profile}: the reference fails on random inputs ({outcome.reason})",
            )
            _DECIDED_HERE[(problem.id, problem.content_hash, spec.profile)] = (mode, why)
            record_probe(problem.path, spec.profile, _preset_of(spec.profile), mode, outcome.reason)
            doc = run("original")
    doc["problem"]["inputs"] = (
        "randomized" if mode == "randomized" else (ORIGINAL_LABEL if not requested else "original (requested)")
    )
    doc["problem"]["inputs_decision"] = why
    doc["problem"]["imported"] = dict(problem.imported or {})
    doc["problem"]["roofline"] = "none: imported problems carry no byte or FLOP model"
    doc["roofline"] = None
    doc.setdefault("phases", {})
    if probe_seconds:
        doc["phases"]["input_probe"] = round(probe_seconds, 3)
    doc["phases"]["total"] = round(time.monotonic() - started, 3)
    return doc


def _preset_of(profile: str) -> str:
    from evaluator.contract.profiles import get_profile

    return get_profile(profile).preset
