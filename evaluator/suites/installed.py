"""Where every evaluation starts (the RQ jobs, ``arena eval``, ``arena test --local``): :func:`evaluate` resolves the
spec once and dispatches it, to the host or to the evaluator its problem's suite registered. Importing this module
registers every imported suite this evaluator knows (``evaluator.suites``); the host itself never imports a suite."""

from __future__ import annotations

from typing import Any

from evaluator.contract.result import Verdict, empty_document
from evaluator.contract.spec import EvalSpec
from evaluator.host.plan import Evaluation, resolve
from evaluator.suites import evaluator_for
from evaluator.suites.pkb import evaluate as pkb_evaluate

SUITE_EVALUATORS = (pkb_evaluate.evaluate_imported,)  # one per suite; naming them keeps the imports meaningful


def evaluate(spec: EvalSpec, workdir_parent: str | None = None, keep_workdir: bool = False) -> dict[str, Any]:
    """The result document of ``spec``: resolved here (evaluator/host/plan.py), the one place its problem and profile
    are looked up, then evaluated by the host, or, for a problem of an imported suite, by the evaluator its suite
    registered. A problem whose suite registered nothing ends ``infra_error`` and says why: it fails closed."""
    from evaluator.host.evaluate import evaluate as host_evaluate  # torch and the sandbox only when an evaluation runs

    plan = resolve(spec)
    if plan.suite_source is None:
        return host_evaluate(plan, workdir_parent, keep_workdir)
    suite_evaluate = evaluator_for(plan.suite_source)
    if suite_evaluate is None:
        return _unregistered(plan)
    return suite_evaluate(plan, workdir_parent, keep_workdir)


def _unregistered(plan: Evaluation) -> dict[str, Any]:
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
    doc["message"] = (
        f"this worker cannot evaluate {problem.id}: no evaluator is registered for problems imported "
        f"from {plan.suite_source or 'an unnamed source'} (import evaluator.suites.installed where evaluations start)"
    )
    return doc
