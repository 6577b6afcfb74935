"""The spec resolved once, where an evaluation starts, into what each of its stages needs: the problem at its size, the
hardware profile, the limits, the solution's backend, the iterations. The stages (evaluator/host/evaluate.py and the
modules it hands to) take an :class:`Evaluation` and never look the problem or the profile up again: the walk is in
docs/architecture.md, "One evaluation's path", and tests/evaluator/test_evaluation_path.py holds the code to it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from evaluator.contract import backends
from evaluator.contract.profiles import HardwareProfile, get_profile
from evaluator.contract.spec import EvalSpec
from problems.registry import Problem, sized

# (timed iterations, warm-up iterations) by device, when the spec leaves them to the profile.
ITERATIONS = {"cpu": (20, 3), "cuda": (100, 10)}


@dataclass(frozen=True)
class Evaluation:
    """One evaluation as its stages see it. A problem of an imported suite is evaluated by the evaluator its suite
    registered (``suite_source``; evaluator/suites: the entry point dispatches, the host never calls a suite), which
    makes each of its runs from this one (the same problem, profile and limits) and hands them to the host."""

    spec: EvalSpec
    problem: Problem
    profile: HardwareProfile
    imported: Mapping[str, Any] | None  # an imported problem's origin (its judge reads the suite's files); else None
    suite_source: str | None  # the suite whose registered evaluator runs it; None: the host (or one of a suite's runs)
    params: dict[str, Any]  # the preset's size parameters with the spec's overrides
    dtype: str  # the preset's dtype (the roofline's peak)
    roofline_terms: Mapping[str, float] | None  # bytes and FLOPs per rank at this size and world size
    roofline_failure: Exception | None  # what computing them raised: the evaluation raises it where it needs them
    backend: str | None  # the backend the solution declares (docs/backends/); None for none or an invalid one
    declaration: backends.Declaration  # its declaration as read once here (the static check refuses an invalid one)
    limits: Mapping[str, float]  # each phase's limit in seconds (the spec's timeouts)
    iterations: int  # timed iterations
    warmup: int  # warm-up iterations before them
    min_window_calls: int  # the fewest calls a timed window may hold (evaluator/host/batch.py)
    read_paths: tuple[Path, ...]  # what the judge's processes read outside the repository (an imported problem's)
    suites_root: Path | None  # where imported suites live, for an imported problem

    @property
    def world_size(self) -> int:
        return self.profile.world_size


def solution_backend(spec: EvalSpec) -> str | None:
    """The backend the solution declares (docs/backends/); None when it declares none or an invalid one (which the
    static check refuses)."""
    return backends.read_declaration(spec.solution_source, spec.solution_name).backend


def resolve(spec: EvalSpec, *, imported_inner: bool = False) -> Evaluation:
    """``spec`` resolved: raises what an unknown profile or problem, or size overrides the preset lacks, raise.
    ``imported_inner``: one of an imported suite's own runs, which the host evaluates rather than its suite."""
    profile = get_profile(spec.profile, allow_smoke=True)
    problem = sized(spec.problem_id, profile.preset, profile.world_size, spec.params)
    default_iterations, default_warmup = ITERATIONS[profile.device]
    declaration = backends.read_declaration(spec.solution_source, spec.solution_name)
    return Evaluation(
        spec=spec,
        problem=problem.problem,
        profile=profile,
        imported=problem.imported,
        suite_source=str(problem.imported.get("source", "")) if problem.imported and not imported_inner else None,
        params=problem.params,
        dtype=problem.dtype,
        roofline_terms=problem.roofline_terms,
        roofline_failure=problem.roofline_failure,
        backend=declaration.backend,
        declaration=declaration,
        limits=spec.timeouts,
        iterations=spec.timing_iterations or default_iterations,
        warmup=spec.warmup_iterations if spec.warmup_iterations is not None else default_warmup,
        min_window_calls=max(1, int(spec.min_window_calls)),
        read_paths=problem.read_paths,
        suites_root=problem.suites_root,
    )
