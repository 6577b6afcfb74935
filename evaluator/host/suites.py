"""How a problem of an imported suite is evaluated: each suite registers its evaluator here, under the ``source`` that
its problems' ``[imported]`` table names, and :func:`evaluator.host.evaluate.evaluate` dispatches to it.

The host never imports a suite (a suite builds on the host, so the other direction would be a circle): whatever starts
evaluations (the RQ jobs, ``arena eval``) imports :mod:`evaluator.suites.installed` first, which registers every suite
this evaluator knows. A problem whose suite registered nothing ends ``infra_error`` and says why: it fails closed."""

from __future__ import annotations

from typing import Any, Callable

from evaluator.contract.result import Verdict, empty_document
from evaluator.contract.spec import EvalSpec
from problems.registry import Problem

# (spec, problem, workdir_parent, keep_workdir) -> the result document. The suite evaluates its problem's inner runs
# through ``evaluate(..., imported_inner=True)``, which skips this dispatch.
SuiteEvaluator = Callable[[EvalSpec, Problem, str | None, bool], dict[str, Any]]

_EVALUATORS: dict[str, SuiteEvaluator] = {}


def register(source: str) -> Callable[[SuiteEvaluator], SuiteEvaluator]:
    """Decorator: ``fn`` evaluates the problems imported from ``source`` (e.g. "ParallelKernelBench")."""

    def add(fn: SuiteEvaluator) -> SuiteEvaluator:
        known = _EVALUATORS.get(source)
        if known is not None and known is not fn:
            raise ValueError(
                f"two evaluators registered for the suite source {source!r}: {known.__module__} and {fn.__module__}"
            )
        _EVALUATORS[source] = fn
        return fn

    return add


def evaluate_imported(
    spec: EvalSpec, problem: Problem, workdir_parent: str | None, keep_workdir: bool
) -> dict[str, Any]:
    """The result document of ``spec`` on an imported ``problem``, from its suite's registered evaluator."""
    source = str((problem.imported or {}).get("source", ""))
    suite_evaluate = _EVALUATORS.get(source)
    if suite_evaluate is not None:
        return suite_evaluate(spec, problem, workdir_parent, keep_workdir)
    doc = empty_document()
    doc["problem"] = {
        "id": problem.id,
        "version": problem.version,
        "content_hash": problem.content_hash,
        "suite": problem.suite,
        "imported": dict(problem.imported or {}),
    }
    doc["verdict"] = Verdict.INFRA_ERROR.value
    doc["message"] = (
        f"this worker cannot evaluate {problem.id}: no evaluator is registered for problems imported "
        f"from {source or 'an unnamed source'} (import evaluator.suites.installed where evaluations "
        f"start)"
    )
    return doc
