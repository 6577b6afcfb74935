"""Where every evaluation starts (the RQ jobs, ``arena eval``, ``arena test --local``): :func:`evaluate` resolves the
spec once and dispatches it, to the host or to the evaluator its problem's suite registered. Importing this module
registers every imported suite this evaluator knows (``evaluator.suites``); the host itself never imports a suite."""

from __future__ import annotations

from typing import Any

from evaluator.contract.spec import EvalSpec
from evaluator.host.plan import resolve
from evaluator.suites import cannot_evaluate, evaluator_for
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
        return cannot_evaluate(
            plan,
            f"no evaluator is registered for problems imported from {plan.suite_source or 'an unnamed source'} "
            f"(this evaluator does not know that suite)",
        )
    return suite_evaluate(plan, workdir_parent, keep_workdir)
