"""Imported suites register how their problems are evaluated (evaluator/suites/__init__.py); where an evaluation starts
(evaluator/suites/installed.py) the spec is resolved and dispatched to them, and the host never calls a suite."""

from __future__ import annotations

import dataclasses

import pytest

from evaluator import suites
from evaluator.contract.result import Verdict
from evaluator.contract.spec import EvalSpec
from evaluator.host.evaluate import evaluate as host_evaluate
from evaluator.host.plan import resolve
from evaluator.suites import installed

# A problem of the catalogue, resolved, then passed off as an imported one: what dispatch reads is the plan.
SPEC = EvalSpec(problem_id="collectives/all_reduce", solution_source="def solution(x):\n    return x\n")


def _imported_from(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = installed.resolve

    def resolve_as_imported(spec: EvalSpec):
        plan = real(spec)
        return dataclasses.replace(plan, imported={"source": source}, suite_source=source)

    monkeypatch.setattr(installed, "resolve", resolve_as_imported)


def test_a_problem_of_a_suite_that_registered_nothing_ends_infra_error_naming_its_source(monkeypatch):
    _imported_from("NoSuchBench", monkeypatch)
    doc = installed.evaluate(SPEC)
    assert doc["verdict"] == Verdict.INFRA_ERROR.value
    assert "NoSuchBench" in doc["message"] and doc["problem"]["id"] == "collectives/all_reduce"
    assert doc["problem"]["imported"] == {"source": "NoSuchBench"}


def test_a_registered_suite_gets_the_evaluation_and_a_second_evaluator_for_it_is_refused(monkeypatch):
    monkeypatch.setattr(suites, "_EVALUATORS", {})
    _imported_from("SomeBench", monkeypatch)
    seen = []

    @suites.register("SomeBench")
    def evaluate_somebench(plan, workdir_parent, keep_workdir):
        seen.append((plan.problem.id, plan.suite_source, workdir_parent, keep_workdir))
        return {"verdict": "passed"}

    assert installed.evaluate(SPEC, "/w", True) == {"verdict": "passed"}
    assert seen == [("collectives/all_reduce", "SomeBench", "/w", True)]
    assert suites.register("SomeBench")(evaluate_somebench) is evaluate_somebench  # the same one again is harmless
    with pytest.raises(ValueError, match="two evaluators"):
        suites.register("SomeBench")(lambda *a: {})


def test_the_host_given_an_imported_problem_not_dispatched_to_its_suite_fails_closed():
    plan = dataclasses.replace(resolve(SPEC), imported={"source": "SomeBench"}, suite_source="SomeBench")
    doc = host_evaluate(plan)
    assert doc["verdict"] == Verdict.INFRA_ERROR.value
    assert "imported suite" in doc["message"] and "evaluator.suites.installed" in doc["message"]


def test_installed_registers_parallelkernelbench():
    from evaluator.suites.pkb import SOURCE

    assert suites.evaluator_for(SOURCE) is installed.pkb_evaluate.evaluate_imported
