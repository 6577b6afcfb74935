"""Evaluating a problem of an imported suite: picks its inputs, evaluates, says which inputs were used.

Registered (``evaluator.suites``) for problems imported from ParallelKernelBench when this module is imported
(``evaluator.suites.installed`` does it for every entry point). Which inputs: those the spec requests, else those
recorded for the problem in its ``probe.toml`` (at import, or by an earlier evaluation), else those that trusted runs
of the reference alone decide now (evaluator/suites/pkb/probe.py), recorded for the next evaluation. Each run is made
from the evaluation as resolved where it started (the same problem, profile and limits: nothing is looked up again)
and handed to the host."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.contract.result import Verdict
from evaluator.suites import cannot_evaluate, register
from evaluator.suites.pkb import IMPORT_PROFILE, ORIGINAL_LABEL, PROBE_FILE, SOURCE, toml_str
from evaluator.suites.pkb.probe import decide, probe_reference
from problems.registry import Problem

if TYPE_CHECKING:
    from evaluator.host.plan import Evaluation

_DECIDED_HERE: dict[tuple[str, str, str], tuple[str, str]] = {}


@register(SOURCE)
def evaluate_imported(
    plan: Evaluation, workdir_parent: str | None = None, keep_workdir: bool = False
) -> dict[str, Any]:
    """The result document of a problem imported from ParallelKernelBench: picks randomized or original inputs (see
    ``evaluator.suites.pkb``'s docstring), evaluates, and says in ``doc["problem"]["inputs"]`` which inputs were
    used."""
    from evaluator.host.evaluate import evaluate  # torch and the sandbox only when an evaluation runs
    from problems.imported import ImportedProblem

    started = time.monotonic()
    spec, problem, profile = plan.spec, plan.problem, plan.profile.name
    changed = ImportedProblem(problem.path).changed()
    if changed:
        return cannot_evaluate(plan, changed)

    probe_seconds = 0.0
    requested = (spec.params or {}).get("inputs")
    probed_now = False
    key = (problem.id, problem.content_hash, profile)
    if requested:
        mode, why = requested, "requested by the evaluation spec"
    else:
        mode, why = recorded_decision(problem, profile)
        if mode is None and key in _DECIDED_HERE:
            mode, why = _DECIDED_HERE[key]
        if mode is None:
            mode, reason, probe_seconds = decide(problem.id, profile, spec.timeouts)
            probed_now = True
            if mode == "undecided":  # the reference cannot run even on original inputs: let the run show it
                mode, why = "randomized", f"undecided: {reason}"
            else:
                why = f"decided at evaluation on {profile}" + (f": {reason}" if reason else "")
                _DECIDED_HERE[key] = (mode, why)
                record_probe(problem.path, profile, plan.profile.preset, mode, reason)

    doc = evaluate(_run_on(plan, mode), workdir_parent, keep_workdir)
    failed = doc.get("verdict") in (Verdict.RUNTIME_ERROR.value, Verdict.TIMEOUT.value)
    if mode == "randomized" and not requested and not probed_now and failed:
        # Did the solution fail, or the reference on random values? Only a run without the solution can tell.
        outcome = probe_reference(problem.id, profile, "randomized", spec.timeouts)
        probe_seconds += outcome.seconds
        if outcome.accepted is False:
            mode, why = (
                "original",
                f"decided at evaluation on {profile}: the reference fails on random inputs ({outcome.reason})",
            )
            _DECIDED_HERE[key] = (mode, why)
            record_probe(problem.path, profile, plan.profile.preset, mode, outcome.reason)
            doc = evaluate(_run_on(plan, "original"), workdir_parent, keep_workdir)
    doc["problem"]["inputs"] = (
        "randomized" if mode == "randomized" else (ORIGINAL_LABEL if not requested else "original (requested)")
    )
    doc["problem"]["inputs_decision"] = why
    doc["problem"]["imported"] = dict(plan.imported or {})
    doc["problem"]["roofline"] = "none: imported problems carry no byte or FLOP model"
    doc["roofline"] = None
    doc.setdefault("phases", {})
    if probe_seconds:
        doc["phases"]["input_probe"] = round(probe_seconds, 3)
    doc["phases"]["total"] = round(time.monotonic() - started, 3)
    return doc


def _run_on(plan: Evaluation, inputs: str) -> Evaluation:
    """One run of ``plan`` for the host: the same evaluation on ``inputs`` ("randomized" or "original", the
    ``inputs`` size parameter every imported problem's preset has), no longer to be handed to this suite."""
    spec = dataclasses.replace(plan.spec, params={**(plan.spec.params or {}), "inputs": inputs})
    return dataclasses.replace(plan, spec=spec, params={**plan.params, "inputs": inputs}, suite_source=None)


# --- the record of decisions: probe.toml in each problem's folder ---


def read_probes(problem: Problem) -> dict[str, dict[str, Any]]:
    try:
        return tomllib.loads((problem.path / PROBE_FILE).read_text()).get("profiles", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def record_probe(folder: Path, profile: str, preset: str, inputs: str, reason: str) -> None:
    """Adds or replaces one profile's decision in ``probe.toml`` (atomically; best effort)."""
    path = folder / PROBE_FILE
    try:
        entries = tomllib.loads(path.read_text()).get("profiles", {}) if path.is_file() else {}
    except (OSError, tomllib.TOMLDecodeError):
        entries = {}
    entries[profile] = {
        "inputs": inputs,
        "reason": reason,
        "preset": preset,
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    text = [
        "# Which inputs this problem's reference accepts, per hardware profile, from trusted runs of the",
        "# reference alone (docs/pkb.md). Not part of the problem's content hash; safe to delete.",
        "",
    ]
    for name, e in sorted(entries.items()):
        text.append(f"[profiles.{toml_str(name)}]")
        text += [f"{k} = {toml_str(str(v))}" for k, v in e.items()]
        text.append("")
    tmp = path.with_name(f".{PROBE_FILE}.{os.getpid()}")
    try:
        tmp.write_text("\n".join(text))
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)


def recorded_decision(problem: Problem, profile: str) -> tuple[str | None, str]:
    """A conclusive recorded decision, this profile's first, then any other profile's (a reference that rejects random
    values rejects them whatever the size); (None, "") when there is none."""
    probes = read_probes(problem)
    ordered = [profile] + sorted(p for p in probes if p != profile)
    for name in ordered:
        e = probes.get(name) or {}
        if e.get("inputs") in ("randomized", "original"):
            where = "at import" if name == IMPORT_PROFILE else "by an earlier evaluation"
            return e["inputs"], f"decided {where} on {name}" + (f": {e['reason']}" if e.get("reason") else "")
    return None, ""
