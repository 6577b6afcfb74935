"""The RQ job's own failures: what reaches the result when the evaluator itself fails."""

from __future__ import annotations

from pathlib import Path

from evaluator.contract.spec import EvalSpec
from evaluator.host.evaluate import _write_solution
from evaluator.host.jobs import evaluate_job


def test_the_evaluators_own_failure_says_what_failed_not_where(monkeypatch, tmp_path):
    # An OSError names its file: a solution uploaded under a name too long for the file system put the evaluation's
    # folder on the host into the result, past every rewrite of host paths.
    import evaluator.suites.installed as installed

    where = tmp_path / "arena-eval-x" / "solution" / ("é" * 127 + ".py")

    def fails(spec: EvalSpec) -> dict:
        raise OSError(36, "File name too long", str(where))

    monkeypatch.setattr(installed, "evaluate", fails)
    spec = EvalSpec(problem_id="collectives/all_reduce", solution_source="x = 1\n", profile="cpu-gloo-2")
    document = evaluate_job(spec.to_dict(), 1, "nonce")["document"]
    assert document["verdict"] == "infra_error"
    assert "OSError" in document["message"] and str(tmp_path) not in document["message"], document["message"]


def test_a_spec_the_job_cannot_read_is_refused_with_what_is_wrong_with_it():
    document = evaluate_job({"problem_id": "collectives/all_reduce"}, 1, "nonce")["document"]
    assert document["verdict"] == "infra_error"
    assert "spec was refused" in document["message"], document["message"]


def test_a_name_the_file_system_would_refuse_is_written_as_solution_py(tmp_path):
    spec = EvalSpec(problem_id="collectives/all_reduce", solution_source="x = 1\n", solution_name="é" * 127 + ".py")
    assert _write_solution(tmp_path, spec) == "solution.py"
    assert (tmp_path / "solution.py").read_text() == "x = 1\n"
    named = EvalSpec(problem_id="collectives/all_reduce", solution_source="x = 1\n", solution_name="fast.py")
    assert _write_solution(Path(tmp_path), named) == "fast.py"
