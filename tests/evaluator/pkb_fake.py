"""A small checkout of ParallelKernelBench's shape, written by the tests (in this project's words; nothing of PKB
is used), for tests/evaluator/test_pkb.py and benchmarks/pkb_gpu_check.py. Four reference files, an input
generator, one git commit:
  1_all_reduce                 every rank's input is the same constant tensor (ones), as PKB's collectives are
  2_all_gather                 every rank's input is a constant of its own (rank + 1)
  3_matmul_all_reduce          per-rank activations and a weight replicated on every rank
  4_expert_split_by_counts     a float tensor of whole-number counts: the reference refuses random values
With ``cuda_only=True`` a fifth, 5_cuda_stream_all_reduce, whose reference runs only on GPUs.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

GENERATOR = '''
"""Inputs of the fake checkout: create_input_tensor(rank, world_size, problem_id, base_shape, dtype, trial, device)."""
import torch


def create_input_tensor(rank, world_size, problem_id, base_shape, dtype=torch.bfloat16, trial=0, device=None):
    device = device if device is not None else torch.device("cuda", rank)
    rows, cols = base_shape
    if problem_id in (1, 5):
        return (torch.ones(rows, cols, dtype=dtype, device=device),)
    if problem_id == 2:
        return (torch.full((rows, cols), float(rank + 1), dtype=dtype, device=device),)
    if problem_id == 3:
        mine = torch.Generator().manual_seed(100 * trial + rank + 1)
        common = torch.Generator().manual_seed(100 * trial)
        x = torch.randn(rows, cols, generator=mine).to(device=device, dtype=dtype)
        w = (torch.randn(cols, cols, generator=common) / cols ** 0.5).to(device=device, dtype=dtype)
        return (x, w)
    if problem_id == 4:
        x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(trial + rank))
        x = x.to(device=device, dtype=dtype)
        counts = [rows // world_size] * world_size
        counts[-1] += rows - sum(counts)
        return (x, torch.tensor(counts, dtype=torch.float32, device=device))
    raise ValueError(f"no problem {problem_id}")
'''

REFERENCES = {
    "1_all_reduce.py": """
        import torch.distributed as dist


        def solution(x):
            out = x.clone()
            dist.all_reduce(out)
            return out
        """,
    "2_all_gather.py": """
        import torch
        import torch.distributed as dist


        def solution(x):
            out = torch.empty((dist.get_world_size() * x.shape[0], *x.shape[1:]), dtype=x.dtype, device=x.device)
            dist.all_gather_into_tensor(out, x.contiguous())
            return out
        """,
    "3_matmul_all_reduce.py": """
        import torch.distributed as dist


        def solution(x, w):
            y = x @ w
            dist.all_reduce(y)
            return y
        """,
    "4_expert_split_by_counts.py": """
        import torch.distributed as dist


        def solution(x, counts):
            sizes = counts.tolist()
            if any(c != int(c) or c < 0 for c in sizes) or sum(sizes) != x.shape[0]:
                raise ValueError("counts must be whole numbers that add up to the rows of x")
            start = int(sum(sizes[:dist.get_rank()]))
            piece = x[start:start + int(sizes[dist.get_rank()])].clone()
            dist.all_reduce(piece)
            return piece
        """,
}

CORRECT_ALL_REDUCE = """
import torch
import torch.distributed as dist


def solution(x):
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x)
    return torch.stack(parts).sum(0)
"""

CONSTANT_CHEAT = """
import torch
import torch.distributed as dist


def solution(x):
    # What the sum is when every rank holds ones: no communication at all.
    return torch.full_like(x, float(dist.get_world_size()))
"""

# Correct only while w is the same on every rank: each rank multiplies every rank's activations by its own copy
# of w. The products and their sum round exactly as the reference's (for two ranks), so it passes even in bf16.
REPLICATION_AWARE_MATMUL = """
import torch
import torch.distributed as dist


def solution(x, w):
    xs = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(xs, x.contiguous())
    out = xs[0] @ w
    for other in xs[1:]:
        out = out + other @ w
    return out
"""


CUDA_ONLY = {
    "5_cuda_stream_all_reduce.py": """
        import torch
        import torch.distributed as dist


        def solution(x):
            side = torch.cuda.Stream()  # fails on CPU: there is no CUDA there
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                out = x.clone()
            torch.cuda.current_stream().wait_stream(side)
            dist.all_reduce(out)
            return out
        """,
}


def write_checkout(
    root: Path, git: bool = True, cuda_only: bool = False, replace: dict[str, str] | None = None
) -> Path:
    """The checkout under ``root``; ``replace`` gives some reference files other bodies (a hostile reference)."""
    (root / "reference").mkdir(parents=True)
    (root / "utils").mkdir()
    (root / "solutions").mkdir()
    (root / "utils" / "input_output_tensors.py").write_text(GENERATOR)
    for name, body in {**REFERENCES, **(CUDA_ONLY if cuda_only else {}), **(replace or {})}.items():
        (root / "reference" / name).write_text(textwrap.dedent(body).lstrip())
    (root / "solutions" / "1_all_reduce_triton.py").write_text(CORRECT_ALL_REDUCE)
    if git:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
        }
        for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "fake checkout"]):
            subprocess.run(["git", "-C", str(root), *cmd], check=True, env=env, capture_output=True)
    return root


def head(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
