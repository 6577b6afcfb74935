"""Every imported suite this evaluator knows, registered with the host (``evaluator.host.suites``) by importing this
module. The places that start evaluations import it (``evaluator.jobs``, ``arena eval``, ``arena test --local``); the
host itself never imports a suite."""

from __future__ import annotations

from evaluator.suites.pkb import evaluate as pkb_evaluate

SUITE_EVALUATORS = (pkb_evaluate.evaluate_imported,)  # one per suite; naming them keeps the imports meaningful
