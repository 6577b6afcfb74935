"""Prompt packs: rendered from the problem folder, versioned by what went in, written by `arena prompts`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from evaluator import prompts
from problems.registry import PROBLEMS_ROOT, get, load_problem

ROOT = Path(__file__).resolve().parents[2]
ALL_REDUCE = "collectives/all_reduce"


def test_a_prompt_holds_the_statement_topology_reference_guide_and_output_format():
    row = prompts.render(get(ALL_REDUCE), "h200-nvlink-4", "symmetric-memory")
    text = row["prompt"]
    problem = get(ALL_REDUCE)
    assert problem.statement.strip()[:200] in text
    assert problem.reference_source.strip() in text
    assert "4× NVIDIA H200" in text and "NVLink multicast is off" in text and "478 GB/s" in text
    assert prompts.guide("symmetric-memory").strip() in text
    assert "solution(x: torch.Tensor) -> torch.Tensor" in text and 'BACKEND = "symmetric-memory"' in text
    assert row["problem_version"] == problem.version and row["problem_content_hash"] == problem.content_hash
    assert set(prompts.available_backends()) >= {"cuda", "triton", "symmetric-memory"}


def test_prompts_differ_when_a_problem_version_changes(tmp_path):
    root = tmp_path / "problems"
    shutil.copytree(PROBLEMS_ROOT / ALL_REDUCE, root / ALL_REDUCE)
    before = load_problem(root / ALL_REDUCE, root)
    toml = root / ALL_REDUCE / "problem.toml"
    toml.write_text(toml.read_text().replace("version = 1", "version = 2", 1))
    after = load_problem(root / ALL_REDUCE, root)
    assert after.version == 2
    a, b = prompts.render(before, "h200-nvlink-4", "cuda"), prompts.render(after, "h200-nvlink-4", "cuda")
    assert a["prompt"] != b["prompt"] and a["prompt_version"] != b["prompt_version"]
    assert prompts.pack_version([a]) != prompts.pack_version([b])
    # Any edit of the folder changes the version, even one that leaves the text alone.
    (root / ALL_REDUCE / "reference.py").write_text(before.reference_source + "\n")
    assert (
        prompts.render(load_problem(root / ALL_REDUCE, root), "h200-nvlink-4", "cuda")["prompt_version"]
        != b["prompt_version"]
    )


def test_arena_prompts_writes_a_pack_as_jsonl_without_torch():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, runpy; sys.argv = ['arena', 'prompts', '--backend', "
            "'cuda', '--hardware', 'h200-nvlink-4']; from evaluator.cli.main import main; code = main(); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(code)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows and {r["backend"] for r in rows} == {"cuda"} and {r["hardware"] for r in rows} == {"h200-nvlink-4"}
    assert len({r["pack_version"] for r in rows}) == 1 and rows[0]["pack_version"].startswith("pp-")
    assert ALL_REDUCE in {r["problem"] for r in rows}
    assert all(4 in get(r["problem"]).world_sizes for r in rows)
