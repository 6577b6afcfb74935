"""Imported suites register how their problems are evaluated (evaluator/host/suites.py); the host dispatches to them
and never imports a suite."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evaluator.contract.result import Verdict
from evaluator.contract.spec import EvalSpec
from evaluator.host import suites


def _problem(source: str) -> SimpleNamespace:
    return SimpleNamespace(
        id="somesuite/1_x", version=1, content_hash="h", suite="somesuite", imported={"source": source}
    )


def test_a_problem_of_a_suite_that_registered_nothing_ends_infra_error_naming_its_source():
    spec = EvalSpec(problem_id="somesuite/1_x", solution_source="def solution(x):\n    return x\n")
    doc = suites.evaluate_imported(spec, _problem("NoSuchBench"), None, False)
    assert doc["verdict"] == Verdict.INFRA_ERROR.value
    assert "NoSuchBench" in doc["message"] and doc["problem"]["id"] == "somesuite/1_x"


def test_a_registered_suite_gets_the_evaluation_and_a_second_evaluator_for_it_is_refused(monkeypatch):
    monkeypatch.setattr(suites, "_EVALUATORS", {})
    seen = []

    @suites.register("SomeBench")
    def evaluate_somebench(spec, problem, workdir_parent, keep_workdir):
        seen.append((problem.id, workdir_parent, keep_workdir))
        return {"verdict": "passed"}

    spec = EvalSpec(problem_id="somesuite/1_x", solution_source="")
    assert suites.evaluate_imported(spec, _problem("SomeBench"), "/w", True) == {"verdict": "passed"}
    assert seen == [("somesuite/1_x", "/w", True)]
    assert suites.register("SomeBench")(evaluate_somebench) is evaluate_somebench  # the same one again is harmless
    with pytest.raises(ValueError, match="two evaluators"):
        suites.register("SomeBench")(lambda *a: {})


def test_installed_registers_parallelkernelbench():
    from evaluator.suites import installed
    from evaluator.suites.pkb import SOURCE

    assert suites._EVALUATORS[SOURCE] is installed.pkb_evaluate.evaluate_imported
