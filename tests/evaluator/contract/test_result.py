"""The result document's one reader (evaluator/contract/result.py ``from_json``): typed figures, every top-level key
declared, and an error that names the field."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evaluator.contract.result import TOP_LEVEL_KEYS, ResultDocumentError, Verdict, empty_document, from_json

EVALUATOR = Path(__file__).resolve().parents[3] / "evaluator"


def _passed() -> dict:
    doc = empty_document()
    doc.update(
        verdict="passed",
        message="ok",
        problem={"id": "collectives/all_reduce", "version": 3, "content_hash": "h" * 64, "suite": "arena"},
        timing={
            "speedup": 1.25,
            "speedup_ci": [1.2, 1.3],
            "baseline": {"median_us": 125.0},
            "solution": {"median_us": 100},
            "protocol_revision": 7,
            "speedup_estimator": "median",
        },
        roofline={"time_us": 10.0, "bound": "link", "baseline_fraction": 0.08, "solution_fraction": 0.1},
    )
    return doc


def test_a_timed_document_reads_typed():
    read = from_json(_passed())
    assert read.verdict is Verdict.PASSED and read.problem.version == 3 and read.problem.content_hash == "h" * 64
    assert read.timing is not None and read.timing.speedup == 1.25 and read.timing.solution.median_us == 100.0
    assert (read.timing.speedup_ci.low, read.timing.speedup_ci.high) == (1.2, 1.3)
    assert read.timing.protocol_revision == 7 and read.roofline.solution_fraction == 0.1
    assert read.raw["timing"]["speedup"] == 1.25  # the whole document is kept as it came


def test_an_untimed_failure_and_an_interval_written_as_an_object_read_too():
    doc = empty_document()
    doc.update(verdict="wrong_output", message="trial 0, rank 1: wrong", failed_ranks=[1])
    read = from_json(doc)
    assert read.timing is None and read.roofline is None and read.failed_ranks == [1] and read.problem.id is None
    doc = _passed()
    doc["timing"]["speedup_ci"] = {"low": 1.1, "high": None}
    assert from_json(doc).timing.speedup_ci.high is None


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda d: d.update(verdict="excellent"), "unknown verdict 'excellent'"),
        (lambda d: d.update(surprise=1), "unknown top-level key(s) 'surprise'"),
        (lambda d: d.update(schema_version=99), "schema_version"),
        (lambda d: d["timing"].update(speedup="fast"), "timing.speedup must be a finite number"),
        (lambda d: d["timing"].update(speedup=float("nan")), "timing.speedup must be a finite number"),
        (lambda d: d["timing"].update(speedup_ci=[1.0]), "timing.speedup_ci"),
        (lambda d: d["timing"]["baseline"].update(median_us=True), "timing.baseline.median_us"),
        (lambda d: d["roofline"].update(solution_fraction="x"), "roofline.solution_fraction"),
        (lambda d: d["problem"].update(version=0), "problem.version"),
        (lambda d: d.update(failed_ranks=["0"]), "failed_ranks"),
        (lambda d: d.update(logs=[]), "logs must be an object"),
        (lambda d: d.update(timing=[]), "timing must be an object"),
    ],
)
def test_a_malformed_document_is_refused_naming_the_field(edit, named):
    doc = _passed()
    edit(doc)
    with pytest.raises(ResultDocumentError, match=named.replace("(", r"\(").replace(")", r"\)")):
        from_json(doc)


def test_not_an_object_is_refused():
    with pytest.raises(ResultDocumentError, match="a result document is a JSON object, not list"):
        from_json([])


def _written_top_level_keys() -> set[str]:
    """Every ``doc["key"] = ...`` / ``document["key"] = ...`` (and the tuple forms) the evaluator writes, by its
    source: what a worker can put at the top of a document."""
    keys: set[str] = set()
    for path in EVALUATOR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if (
                        isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name)
                        and t.value.id in ("doc", "document")
                        and isinstance(t.slice, ast.Constant)
                    ):
                        keys.add(t.slice.value)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setdefault"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("doc", "document")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                keys.add(node.args[0].value)
    return keys


def test_every_top_level_key_the_evaluator_writes_is_declared():
    written = _written_top_level_keys() | set(empty_document())
    assert {
        "verdict",
        "timing",
        "static_checks",
        "containment",
        "limits_reached",
        "traceback",
        "test",
        "diagnostics",
    } <= written  # the scan sees the evaluator's writes
    assert written <= set(TOP_LEVEL_KEYS), sorted(written - set(TOP_LEVEL_KEYS))
