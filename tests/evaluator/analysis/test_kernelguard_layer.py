"""KernelGuard beside our own static checks: its findings are in the report, its certain rules refuse, and no honest
solution of ours trips it."""

from pathlib import Path

import pytest

from evaluator.analysis import static_checks

REPO = Path(__file__).resolve().parents[3]
TIMER_PATCH = """
import torch
import torch.distributed as dist

_elapsed = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, other: _elapsed(self, other) / 10


def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


def test_a_rule_kernelguard_is_certain_of_refuses_and_is_named():
    report = static_checks.check(TIMER_PATCH)
    assert report.refused
    assert any(f.rule == "kernelguard:TIMER_MONKEYPATCH" for f in report.refusals)
    assert report.as_dict()["kernelguard"]["classification"] == "hacked"


@pytest.mark.parametrize(
    "path",
    sorted(
        str(p.relative_to(REPO))
        for p in [*REPO.glob("problems/*/*/solutions/correct/*.py"), *REPO.glob("tests/evaluator/honest/*.py")]
    ),
)
def test_no_known_correct_solution_is_refused_by_kernelguard(path):
    report = static_checks.check((REPO / path).read_text())
    assert not [f for f in report.refusals if f.rule.startswith("kernelguard:")], path
    assert report.as_dict()["kernelguard"]["available"] is True
