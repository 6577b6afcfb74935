"""Every problem's distributed reference equals its single-device oracle on CPU at world sizes 2 and 4; no
output is so flat that a constant would pass; and every known-answer solution gets the verdict its folder says
(known answers of GPU-only backends, docs/backends/, are left to benchmarks/backends_gpu.py)."""

from pathlib import Path

import pytest
import torch

from evaluator.contract.backends import runs_on_cpu
from evaluator.checks.selfcheck import check, flatness_error
from problems.registry import catalogue

# The built-in suite only: imported suites (arena import-pkb) have no oracle.
PROBLEMS = sorted(pid for pid, p in catalogue().items() if p.suite == "arena")


def _world_sizes(problem_id: str) -> list[int]:
    return [w for w in (2, 4) if w in catalogue()[problem_id].world_sizes]


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_reference_matches_oracle_and_is_not_flat(problem_id):
    sizes = _world_sizes(problem_id)
    assert sizes, f"{problem_id} supports neither 2 nor 4 ranks"
    for w in sizes:
        report = check(problem_id, w)
        assert report.ok, f"{problem_id} W={w}: {report.errors}"


def _cpu(paths) -> list[Path]:
    """Known answers that run on CPU: not those of a GPU-only backend (ParallelKittens, NVSHMEM)."""
    return [p for p in sorted(paths) if runs_on_cpu(p.read_text(), p.name)]


def _known_answers() -> list[tuple[str, Path, bool]]:
    cases = []
    for pid in PROBLEMS:
        folder = catalogue()[pid].path / "solutions"
        cases += [(pid, p, True) for p in _cpu((folder / "correct").glob("*.py"))]
        cases += [(pid, p, False) for p in _cpu((folder / "wrong").glob("*.py"))]
    return cases


def test_gpu_only_known_answers_are_left_out_of_the_cpu_run():
    names = {p.name for _, p, _ in _known_answers()}
    gpu = [
        p
        for pid in PROBLEMS
        for p in (catalogue()[pid].path / "solutions").glob("*/*.py")
        if not runs_on_cpu(p.read_text(), p.name)
    ]
    assert gpu, "the ParallelKittens and NVSHMEM known answers are gone"
    assert not names & {p.name for p in gpu}
    assert {"nccl_inplace_copy.py", "list_then_cat.py", "root_sends.py"} <= names


@pytest.mark.parametrize(
    "problem_id, path, must_pass", _known_answers(), ids=lambda v: v.name if isinstance(v, Path) else str(v)
)
def test_known_answer_solutions(problem_id, path, must_pass):
    w = max(_world_sizes(problem_id))
    report = check(problem_id, w, solution_path=path)
    assert report.ok == must_pass, f"{path.name} on {problem_id} W={w}: {report.errors}"


def test_every_problem_has_a_correct_and_a_wrong_known_answer():
    for pid in PROBLEMS:
        folder = catalogue()[pid].path / "solutions"
        assert _cpu((folder / "correct").glob("*.py")), f"{pid} has no solutions/correct/*.py that runs on CPU"
        assert _cpu((folder / "wrong").glob("*.py")), f"{pid} has no solutions/wrong/*.py that runs on CPU"


def test_an_output_is_flat_only_when_a_constant_passes_on_every_rank():
    # A rank whose two experts got equal counts ([15, 15]) once failed moe_dispatch_internode's check, though a
    # constant answer would have been wrong on every other rank, and a solution must be right on all of them.
    problem = catalogue()["collectives/all_reduce"]
    tie = torch.tensor([15.0, 15.0])
    spread = torch.tensor([3.0, 40.0])
    assert flatness_error(problem, [(tie,), (spread,)], "small") is None
    assert "on every rank" in (flatness_error(problem, [(tie,), (torch.tensor([7.0, 7.0]),)], "small") or "")
