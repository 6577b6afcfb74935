"""Proves a problem's reference right: the distributed reference on W CPU ranks (gloo) must equal the
single-device oracle, and the oracle's output must not be so flat that a constant would pass."""

from __future__ import annotations

import os
import tempfile
import traceback
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from evaluator.judge.compare import as_tuple, clone_inputs, compare
from problems.registry import Problem, get, load_module, load_problem


@dataclass(frozen=True)
class SelfCheckReport:
    problem_id: str
    world_size: int
    preset: str
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


def _inputs(problem: Problem, module, rank: int, world_size: int, seed: int, preset: str) -> tuple:
    p = problem.presets[preset]
    return tuple(module.make_inputs(rank, world_size, seed, torch.device("cpu"), p.dtype, **p.params))


def _rank_main(
    rank: int,
    problem: Problem,
    world_size: int,
    seed: int,
    preset: str,
    store_path: str,
    result_dir: str,
    solution_path: str | None,
    timeout_s: float | None,
) -> None:
    torch.set_num_threads(1)
    module = problem.load_reference()
    solve = module.solution if solution_path is None else load_module(Path(solution_path), "arena_selfcheck").solution
    dist.init_process_group(
        "gloo",
        init_method=f"file://{store_path}",
        rank=rank,
        world_size=world_size,
        **({"timeout": timedelta(seconds=timeout_s)} if timeout_s else {}),
    )
    try:
        inputs = _inputs(problem, module, rank, world_size, seed, preset)
        out = solve(*clone_inputs(inputs))
        torch.save(
            [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in as_tuple(out)],
            os.path.join(result_dir, f"rank{rank}.pt"),
        )
        dist.barrier()
    finally:
        dist.destroy_process_group()


def flatness_error(problem: Problem, expected: list, preset: str) -> str | None:
    """An error when a constant (zeros, or the output's own mean) would pass the tolerance on every rank: a solution
    is right only when every rank is, so one rank's tie (two experts with equal counts, say) is no way to pass."""
    tol = problem.tolerance(problem.presets[preset].dtype)
    passing: dict[tuple[int, str], list[bool]] = {}
    for rank_out in expected:
        for i, t in enumerate(as_tuple(rank_out)):
            if not isinstance(t, torch.Tensor) or t.numel() == 0:
                continue
            for name, const in (
                ("zeros", torch.zeros_like(t)),
                (
                    "its mean",
                    torch.full_like(
                        t,
                        t.double().mean().item()
                        if t.dtype.is_floating_point
                        else int(t.double().mean().round().item()),
                    ),
                ),
            ):
                passing.setdefault((i, name), []).append(compare(const, t, tol.atol, tol.rtol) is None)
    for (i, name), passed in passing.items():
        if all(passed):
            return (
                f"a constant output ({name}) would pass the tolerance for output {i} on every rank; make the inputs or "
                f"tolerances tighter"
            )
    return None


def check(
    problem_id: str, world_size: int, seed: int = 1234, preset: str = "small", solution_path: str | Path | None = None
) -> SelfCheckReport:
    """Checks the reference (or, given ``solution_path``, that solution file) against the oracle on CPU."""
    return check_problem(get(problem_id), world_size, seed, preset, solution_path)


class RanksFailed(Exception):
    """A rank of :func:`rank_outputs` raised, or the group could not run: the message says how."""


def rank_outputs(
    problem: Problem,
    world_size: int,
    seed: int,
    preset: str,
    solution_path: str | Path | None,
    timeout_s: float | None,
    *,
    weights_only: bool = True,
) -> list:
    """The reference (or the solution at ``solution_path``) on ``world_size`` gloo ranks forked from this process:
    each rank's outputs, as the rank saved them (``weights_only`` False reads back any object it saved)."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            mp.start_processes(
                _rank_main,
                args=(
                    problem,
                    world_size,
                    seed,
                    preset,
                    os.path.join(tmp, "store"),
                    tmp,
                    None if solution_path is None else str(solution_path),
                    timeout_s,
                ),
                nprocs=world_size,
                join=True,
                start_method="fork",
            )
        except Exception:
            raise RanksFailed(f"failed: {traceback.format_exc(limit=3)[-2000:]}") from None
        return [torch.load(os.path.join(tmp, f"rank{r}.pt"), weights_only=weights_only) for r in range(world_size)]


def check_problem(
    problem: Problem | str | Path,
    world_size: int,
    seed: int = 1234,
    preset: str = "small",
    solution_path: str | Path | None = None,
    timeout_s: float | None = None,
) -> SelfCheckReport:
    """:func:`check` for a problem that need not be in the catalogue: a registry ``Problem``, or a folder
    ``<root>/<category>/<name>/`` that is validated with ``load_problem`` first (a proposal under review).

    ``timeout_s`` bounds each collective (gloo's timeout), so a reference that deadlocks fails instead of hanging.
    """
    if not isinstance(problem, Problem):
        folder = Path(problem).resolve()
        problem = load_problem(folder, folder.parent.parent)
    problem_id = problem.id
    who = "reference" if solution_path is None else "solution"
    if problem.imported:  # imported suites have no oracle: their reference is the ground truth (docs/pkb.md)
        return SelfCheckReport(
            problem_id,
            world_size,
            preset,
            (
                f"{problem_id} is imported from {problem.imported['source']} and has no oracle to check against; "
                f"evaluate solutions against its reference with `arena eval`",
            ),
        )
    errors: list[str] = []
    module = problem.load_reference()
    all_inputs = [_inputs(problem, module, r, world_size, seed, preset) for r in range(world_size)]
    params = problem.presets[preset].params
    expected = module.oracle([clone_inputs(i) for i in all_inputs], **params)
    if len(expected) != world_size:
        return SelfCheckReport(
            problem_id, world_size, preset, (f"oracle returned {len(expected)} outputs for {world_size} ranks",)
        )
    try:
        outputs = rank_outputs(problem, world_size, seed, preset, solution_path, timeout_s)
    except RanksFailed as exc:
        return SelfCheckReport(problem_id, world_size, preset, (f"{who} {exc}",))
    tol = problem.tolerance(problem.presets[preset].dtype)
    for r in range(world_size):
        mismatch = compare(tuple(outputs[r]), as_tuple(expected[r]), tol.atol, tol.rtol)
        if mismatch:
            errors.append(f"rank {r}: {who} differs from oracle: {mismatch.message}")
    if solution_path is not None:
        return SelfCheckReport(problem_id, world_size, preset, tuple(errors))
    flat = flatness_error(problem, expected, preset)
    if flat:
        errors.append(flat)
    # A second seed must change the answer, or the problem cannot tell a cached result from a computed one.
    other_inputs = [_inputs(problem, module, r, world_size, seed + 1, preset) for r in range(world_size)]
    other = module.oracle(other_inputs, **params)
    tol = problem.tolerance(problem.presets[preset].dtype)
    if all(compare(as_tuple(other[r]), as_tuple(expected[r]), tol.atol, tol.rtol) is None for r in range(world_size)):
        errors.append("the output does not change with the seed; inputs must be random")
    return SelfCheckReport(problem_id, world_size, preset, tuple(errors))
