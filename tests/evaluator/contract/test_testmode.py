"""Test mode's contract: the spec of a test (fewer trials, quick timing) and the diagnostics of a failure."""

from __future__ import annotations

from evaluator.contract import testmode
from evaluator.contract.result import empty_document


def test_a_test_spec_has_fewer_trials_and_quick_timing_only_when_asked():
    timed = testmode.test_spec(
        problem_id="collectives/all_reduce", source="x", profile="h200-nvlink-4", device="cuda", timing=True
    )
    assert timed.trials == testmode.TEST_TRIALS < 5
    assert (timed.timing_iterations, timed.warmup_iterations) == testmode.QUICK_ITERATIONS["cuda"]
    assert timed.timing_iterations < 100 and timed.measure_timing
    untimed = testmode.test_spec(problem_id="collectives/all_reduce", source="x", profile="cpu-gloo-2", device="cpu")
    assert not untimed.measure_timing and untimed.timing_iterations is None


def test_annotate_marks_the_document_unranked_and_names_the_source_lines():
    doc = empty_document()
    doc["verdict"] = "compile_error"
    doc["message"] = "rank 0 failed while importing the solution: SyntaxError: expected ':' (mine.py, line 3)"
    doc["traceback"] = (
        'Traceback (most recent call last):\n  File "/solution/mine.py", line 17, in solution\n'
        "    ext = load_inline(...)\n"
    )
    doc["logs"] = {
        "rank0": '/tmp/build/cuda.cu(12): error: identifier "blockIdy" is undefined\n'
        "main.cpp:4:10: fatal error: nope.h: No such file or directory\n"
    }
    spec = testmode.test_spec(
        problem_id="p/q", source="", profile="cpu-gloo-2", device="cpu", solution_name="mine.py", timing=True
    )
    out = testmode.annotate(doc, spec)
    assert out["test"]["ranked"] is False and out["test"]["quick_timing"] is True
    assert out["test"]["timing_iterations"] == testmode.QUICK_ITERATIONS["cpu"][0]
    found = {(d["file"], d["line"], d["kind"]) for d in out["diagnostics"]}
    assert ("mine.py", 3, "syntax") in found
    assert ("mine.py", 17, "traceback") in found
    assert ("cuda.cu", 12, "error") in found and ("main.cpp", 4, "error") in found
    assert out["diagnostics"][0]["file"] == "mine.py"  # the solution's own lines first


def test_a_passed_test_has_no_diagnostics_and_quick_figures_are_marked():
    doc = empty_document()
    doc.update(verdict="passed", timing={"speedup": 1.0})
    spec = testmode.test_spec(problem_id="p/q", source="", profile="cpu-gloo-2", device="cpu", timing=True)
    out = testmode.annotate(doc, spec)
    assert out["diagnostics"] == [] and out["timing"]["quick"] is True


def test_a_syntax_errors_traceback_adds_no_empty_second_line():
    """`arena test --local` of a file with a syntax error printed its line twice, the second time with no text
    (`bad.py:2: traceback: `): the traceback's frame of a syntax error has no function."""
    doc = empty_document()
    doc["verdict"] = "compile_error"
    doc["message"] = "rank 0 failed while importing the solution: SyntaxError: expected ':' (bad.py, line 2)"
    doc["traceback"] = (
        'Traceback (most recent call last):\n  File "/arena/judge/evaluator/rank/worker.py", line 126, '
        'in load_solution\n  File "/solution/bad.py", line 2\n    def solution(x)\n'
        "                   ^\nSyntaxError: expected ':'\n"
    )
    spec = testmode.test_spec(problem_id="p/q", source="", profile="cpu-gloo-2", device="cpu", solution_name="bad.py")
    out = testmode.annotate(doc, spec)
    assert [(d["line"], d["kind"]) for d in out["diagnostics"]] == [(2, "syntax")], out["diagnostics"]
    assert all(d["text"] for d in out["diagnostics"])
