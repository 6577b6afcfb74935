"""`arena check-problem` proves on CPU what the registry's audit proves in CI, for one problem: the reference against
its oracle at every declared world size and node grouping, each known answer's verdict, the bench preset on every GPU
profile, and the roofline's link bytes against the reference's own traffic; it fails when any of them is wrong."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.checks.catalogue_check import local_check
from problems.registry import get, load_problem

ROOT = Path(__file__).resolve().parents[3]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evaluator.cli", "check-problem", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _lines(out: str, what: str) -> list[str]:
    return [line for line in out.splitlines() if line.split()[1:2] == [what]]


def test_check_problem_runs_the_reference_the_known_answers_the_bench_preset_and_the_link_bytes():
    done = _run("collectives/all_reduce", "--world-size", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "ok     reference W=2: passed" in out
    assert "correct/nccl_inplace_copy.py W=2: passed" in out
    # the wrong answer gets its verdict, and W=2 is the largest size asked for, where it must fail
    assert "ok     wrong/off_on_one_rank.py W=2: wrong_output, as a wrong answer must" in out
    assert "correct/one_shot_tiles_parallelkittens.py CPU: skipped" in out
    assert [line.split()[2].rstrip(":") for line in _lines(out, "bench")] == ["h200-nvlink-2"]
    assert "roofline" in _lines(out, "bench")[0] and "GiB of inputs per rank fit" in _lines(out, "bench")[0]
    assert "ok     link bytes W=2: ok" in out
    assert "collectives/all_reduce: 7 of 7 checks as they must be" in out


@pytest.mark.slow
def test_check_problem_covers_every_declared_world_size_and_node_grouping():
    done = _run("collectives/hierarchical_all_reduce")
    assert done.returncode == 0, done.stdout + done.stderr
    wheres = [re.search(r"reference (W=[^:]*):", line).group(1) for line in _lines(done.stdout, "reference")]
    # W = 4 and 8 with the small preset's 2 ranks per node, and W = 8 as h200-2x4 groups it
    assert wheres == ["W=4, 2 nodes of 2", "W=8, 4 nodes of 2", "W=8, 2 nodes of 4"]
    assert len(_lines(done.stdout, "correct/leaders_reduce_broadcast.py")) == 3
    assert len(_lines(done.stdout, "link")) == 3
    # every grouping spans nodes, so each also checks the roofline's inter-node bytes against the reference's own
    assert len([line for line in _lines(done.stdout, "internode") if "to other nodes" in line]) == 3
    assert {line.split()[2].rstrip(":") for line in _lines(done.stdout, "bench")} == {
        "h200-nvlink-4",
        "h200-nvlink-8",
        "h100-nvlink-8",
        "h200-2x4",
    }


def _copy_with_answers(tmp_path: Path, answers: dict[str, str]):
    """collectives/all_reduce copied under tmp_path with these known answers instead of its own."""
    folder = tmp_path / "problems" / "collectives" / "all_reduce"
    shutil.copytree(get("collectives/all_reduce").path, folder)
    shutil.rmtree(folder / "solutions")
    for name, source in answers.items():
        (folder / "solutions" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "solutions" / name).write_text(source)
    return load_problem(folder, tmp_path / "problems")


def test_a_known_answer_that_does_not_behave_as_labelled_fails_the_check(tmp_path):
    problem = _copy_with_answers(
        tmp_path,
        {
            "correct/returns_input.py": "def solution(x):\n    return x.clone()\n",
            "correct/raises.py": "def solution(x):\n    raise RuntimeError('boom')\n",
            "wrong/is_right.py": (
                "import torch.distributed as dist\n\ndef solution(x):\n    y = x.clone()\n"
                "    dist.all_reduce(y)\n    return y\n"
            ),
        },
    )
    lines = {(line.what, line.where): line for line in local_check(problem, (2,), bench=False, traffic=False)}
    assert lines["reference", "W=2"].ok
    assert (lines["correct/returns_input.py", "W=2"].ok, lines["correct/returns_input.py", "W=2"].verdict) == (
        False,
        "wrong_output",
    )
    assert (lines["correct/raises.py", "W=2"].ok, lines["correct/raises.py", "W=2"].verdict) == (False, "runtime_error")
    assert (lines["wrong/is_right.py", "W=2"].ok, lines["wrong/is_right.py", "W=2"].verdict) == (False, "passed")
    assert "do not catch it" in lines["wrong/is_right.py", "W=2"].detail


def test_a_roofline_above_the_references_traffic_fails_the_link_bytes_check(tmp_path):
    problem = _copy_with_answers(tmp_path, {})
    toml = problem.path / "problem.toml"
    toml.write_text(
        toml.read_text().replace(
            'link_bytes_per_rank = "2 * (W - 1) / W * numel * E"', 'link_bytes_per_rank = "2 * numel * E"'
        )
    )
    problem = load_problem(problem.path, tmp_path / "problems")
    [line] = [
        line for line in local_check(problem, (2,), known_answers=False, bench=False) if line.what == "link bytes"
    ]
    assert not line.ok and line.verdict == "failed" and "per call" in line.detail
