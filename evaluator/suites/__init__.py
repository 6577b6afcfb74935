"""Imported suites: problems from other benchmarks, evaluated with their own input generators (docs/pkb.md).

Each suite registers here how its problems are evaluated (:func:`register`, under the ``source`` its problems'
``[imported]`` table names). Where an evaluation starts, :func:`evaluator.suites.installed.evaluate` resolves the spec
and dispatches: a problem of an imported suite goes to the evaluator its suite registered, which hands each of its runs
to the host; the host never calls a suite."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from evaluator.contract.result import Verdict, empty_document

if TYPE_CHECKING:
    from evaluator.host.plan import Evaluation

# (the evaluation as resolved where it started, workdir_parent, keep_workdir) -> the result document.
SuiteEvaluator = Callable[["Evaluation", "str | None", bool], dict[str, Any]]

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


def evaluator_for(source: str) -> SuiteEvaluator | None:
    """The evaluator registered for the problems imported from ``source``, or None."""
    return _EVALUATORS.get(source)


def cannot_evaluate(plan: Evaluation, why: str) -> dict[str, Any]:
    """The document of an imported problem this worker cannot evaluate: ``infra_error``, saying ``why``."""
    problem = plan.problem
    doc = empty_document()
    doc["problem"] = {
        "id": problem.id,
        "version": problem.version,
        "content_hash": problem.content_hash,
        "suite": problem.suite,
        "imported": dict(plan.imported or {}),
    }
    doc["verdict"] = Verdict.INFRA_ERROR.value
    doc["message"] = f"this worker cannot evaluate {problem.id}: {why}"
    return doc
