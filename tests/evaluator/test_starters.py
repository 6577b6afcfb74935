"""Starter files (evaluator/starters.py): generated for every problem from its reference, each stands alone (no
`problems` import), keeps the reference's exact signature, passes the static check and declares the backend its
name says; the plain torch.distributed one passes as given through `arena eval` on CPU."""

from __future__ import annotations

import ast
import builtins
import json
import symtable
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import starters
from evaluator.contract.backends import declared_backend
from evaluator.contract.source import solution_problem
from evaluator.analysis.static_checks import check
from problems.registry import catalogue

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = catalogue()


def _undefined_globals(source: str) -> set[str]:
    """Names the file's functions read as globals that nothing at module level binds (a NameError at the call)."""
    top = symtable.symtable(source, "starter.py", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()} | set(dir(builtins))
    missing: set[str] = set()

    def walk(table) -> None:
        for child in table.get_children():
            if child.get_type() == "function":
                missing.update(n for n in child.get_globals() if n not in bound)
            walk(child)

    walk(top)
    return missing


def _signature_of(source: str) -> str:
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "solution")
    return ast.unparse(node.args) + (" -> " + ast.unparse(node.returns) if node.returns else "")


@pytest.mark.parametrize("problem_id", sorted(CATALOGUE))
def test_every_problem_has_standalone_starters_with_the_reference_signature(problem_id):
    problem = CATALOGUE[problem_id]
    files = starters.starters(problem)
    assert [s.backend for s in files][0] == starters.PLAIN and not files[0].gpu_only
    for s in files:
        tree = ast.parse(s.source)
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        ]
        assert not [m for m in imported if m.split(".")[0] == "problems"], (s.filename, imported)
        assert solution_problem(s.source) is None
        assert not _undefined_globals(s.source), (s.filename, _undefined_globals(s.source))
        assert _signature_of(s.source) == _signature_of(problem.reference_source), s.filename
        report = check(s.source, filename=s.filename)
        assert not report.refused, (s.filename, report.message())
        assert declared_backend(s.source, s.filename) == (None if s.backend == starters.PLAIN else s.backend)
        assert f"--problem {problem_id} --solution {s.filename}" in s.source
        assert ("GPU only" in s.source) == s.gpu_only


def test_a_helper_from_problems_is_copied_in():
    source = starters.starter(CATALOGUE["collectives/hierarchical_all_reduce"], starters.PLAIN).source
    assert "def node_groups(" in source and "def node_layout(" in source and "_NODE_GROUPS" in source


@pytest.mark.parametrize(
    "problem_id, hardware",
    [
        ("collectives/all_reduce", "cpu-gloo-2"),
        ("collectives/hierarchical_all_reduce", "cpu-gloo-2x2"),
        ("data-parallel/ddp_bucketed_overlap", "cpu-gloo-2"),
        ("data-parallel/fused_adam_unshard", "cpu-gloo-2"),
        ("sequence-parallel/ring_attention_backward", "cpu-gloo-2"),
    ],
)
def test_the_plain_starter_passes_as_given_through_arena_eval(problem_id, hardware, tmp_path):
    s = starters.starter(CATALOGUE[problem_id], starters.PLAIN)
    assert f"--hardware {hardware}" in s.source
    path = tmp_path / s.filename
    path.write_text(s.source)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "eval",
            "--problem",
            problem_id,
            "--solution",
            str(path),
            "--hardware",
            hardware,
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["verdict"] == "passed", doc["message"]
