"""Runtime side of an imported suite (``arena import-pkb``, docs/pkb.md): what a generated adapter
``reference.py`` calls to reach the user's own ParallelKernelBench (PKB) checkout and to build inputs from it.

Nothing of that checkout is copied into this project: the adapter names a problem folder; the folder's
``problem.toml`` names the checkout's files and their sha256 at import time; ``../suite.toml`` names the
checkout's absolute path. Files are loaded from there, and refused when they changed since the import.

Inputs. The checkout's generator ``create_input_tensor(rank, world_size, problem_id, base_shape, dtype, trial,
device)`` gives a rank's inputs (its *original* inputs). Some of them are constants, so a solution that returns
a constant can pass on them. In ``randomized`` mode every floating-point tensor among the inputs is replaced by
seeded random values of the same shape, dtype, device and strides:

- **which values** — where the original's finite values vary, normal values with the original's mean and
  standard deviation, clipped to its [min, max]; where they are one constant ``c``, uniform values in
  ``[0.5c, 1.5c]`` (``[-0.5, 0.5]`` when ``c`` is 0), so signs and scale stay what the reference expects.
  NaN/Inf positions of the original (masks) are kept.
- **shared or per rank** — a tensor that is identical on every rank in the originals (replicated weights)
  is replaced by the same random values on every rank, drawn from (seed, input position); any other tensor
  gets values drawn from (seed, input position, rank). A tensor of more than one element that is a single
  constant on every rank counts as per-rank: a constant carries no replication worth keeping, and keeping it
  equal on every rank would let ``x * world_size`` pass for an all-reduce. Which inputs are shared is found
  once per process and configuration by generating every rank's originals (trial 0) on this rank.
- integer and boolean tensors and non-tensor inputs are kept as the generator made them.

``original`` mode returns the generator's inputs unchanged, for the references that fail on random values.
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from problems.registry import SUITE_FILE, ProblemError, load_module
from problems.seeds import derived_seed, seed_generator

INPUT_MODES = ("randomized", "original", "undecided")
CHECKOUT_TRIALS = 5  # the checkout's own trial numbers 0..4; each evaluation trial maps onto one of them
_LOADED: dict[tuple[str, str], ModuleType] = {}  # (path, sha256) -> module, one load per process

if TYPE_CHECKING:
    import torch
# torch is imported where inputs are made, not at import: the evaluator's parent process only checks the
# checkout (ImportedProblem.changed) and need not load torch for that.


class CheckoutChanged(ProblemError):
    """The checkout an imported problem was made from moved or changed since `arena import-pkb` ran."""


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def parse_shape(text: str | int) -> tuple[int, ...]:
    """``"1024x1024"`` -> ``(1024, 1024)``: presets hold the base shape as a string."""
    try:
        shape = tuple(int(part) for part in str(text).lower().split("x"))
    except ValueError:
        raise ProblemError(f"base_shape {text!r} must look like 1024x1024") from None
    if not shape or any(n < 1 for n in shape):
        raise ProblemError(f"base_shape {text!r} must be positive sizes joined by 'x', like 1024x1024")
    return shape


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) for every leaf of nested tuples/lists, paths like ``"0"`` or ``"2.1"``."""
    if isinstance(value, (tuple, list)):
        out: list[tuple[str, Any]] = []
        for i, item in enumerate(value):
            out += _leaves(item, f"{path}.{i}" if path else str(i))
        return out
    return [(path, value)]


def _rebuild(value: Any, replace: dict[str, Any], path: str = "") -> Any:
    if isinstance(value, (tuple, list)):
        items = [_rebuild(item, replace, f"{path}.{i}" if path else str(i)) for i, item in enumerate(value)]
        return type(value)(items) if isinstance(value, list) else tuple(items)
    return replace.get(path, value)


def _randomizable(x: Any) -> bool:
    import torch

    return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()) and x.numel() > 0


def _is_constant(x: torch.Tensor) -> bool:
    import torch

    v = x.detach()
    v = v[torch.isfinite(v)] if not x.is_complex() else v.flatten()
    return v.numel() > 1 and bool((v == v.flatten()[0]).all())


def input_modes(per_rank_inputs: list[tuple]) -> dict[str, str]:
    """``{path: "shared" | "per-rank" | "kept"}`` from every rank's original inputs (see the module docstring)."""
    import torch

    first = _leaves(per_rank_inputs[0])
    others = [dict(_leaves(inp)) for inp in per_rank_inputs[1:]]
    modes: dict[str, str] = {}
    for path, x in first:
        if not _randomizable(x):
            modes[path] = "kept"
            continue
        same = all(
            isinstance(o.get(path), torch.Tensor)
            and o[path].shape == x.shape
            and o[path].dtype == x.dtype
            and bool(torch.equal(o[path].to(x.device), x))
            for o in others
        )
        modes[path] = "shared" if same and not _is_constant(x) else "per-rank"
    return modes


def random_like(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random values of ``x``'s shape, dtype, device, strides and requires_grad, shaped after ``x``'s values."""
    import torch

    src = x.detach().to("cpu", torch.complex128 if x.is_complex() else torch.float64)
    if x.is_complex():
        values = torch.randn(src.shape, dtype=torch.complex128, generator=generator)
    else:
        finite = torch.isfinite(src)
        seen = src[finite]
        if seen.numel() == 0:
            values = src.clone()
        else:
            lo, hi = float(seen.min()), float(seen.max())
            if lo == hi:
                u = torch.rand(src.shape, dtype=torch.float64, generator=generator)
                values = (u - 0.5) if lo == 0 else lo * (0.5 + u)
            else:
                mean, std = float(seen.mean()), float(seen.std()) if seen.numel() > 1 else 1.0
                values = (torch.randn(src.shape, dtype=torch.float64, generator=generator) * std + mean).clamp(lo, hi)
            values = torch.where(finite, values, src)
    out = torch.empty_like(x, requires_grad=False)
    with torch.no_grad():
        out.copy_(values.to(out.dtype))
    if x.requires_grad:
        out.requires_grad_(True)
    return out


def randomize(inputs: tuple, modes: dict[str, str], seed: int, rank: int) -> tuple:
    """``inputs`` with every floating-point tensor replaced as ``modes`` says (shared or per-rank values)."""
    import torch

    replace: dict[str, Any] = {}
    for path, x in _leaves(inputs):
        mode = modes.get(path, "per-rank")
        if mode == "kept" or not _randomizable(x):
            continue
        parts = ("pkb-inputs", seed, path) if mode == "shared" else ("pkb-inputs", seed, path, rank)
        g = seed_generator(torch.Generator(device="cpu"), *parts)
        replace[path] = random_like(x, g)
    return _rebuild(tuple(inputs), replace)


class ImportedProblem:
    """One imported problem folder, bound to the checkout named in its suite's ``suite.toml``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).resolve()
        meta = tomllib.loads((self.folder / "problem.toml").read_text())
        self.meta: dict[str, Any] = meta["imported"]
        suite = tomllib.loads((self.folder.parent / SUITE_FILE).read_text())
        self.checkout = Path(suite["checkout"])
        self.number: int = int(self.meta["number"])
        self.reference_file = self.checkout / self.meta["file"]
        self.inputs_file = self.checkout / self.meta["inputs_file"]
        self._modes: dict[tuple, dict[str, str]] = {}

    def changed(self) -> str | None:
        """Why the checkout no longer matches the import (moved, deleted, edited), or None."""
        for path, key in ((self.reference_file, "file_sha256"), (self.inputs_file, "inputs_sha256")):
            if not path.is_file():
                return (
                    f"{path} is missing: the checkout was moved or changed since `arena import-pkb` ran; "
                    f"run `arena import-pkb {self.checkout}` again"
                )
            if sha256_file(path) != self.meta[key]:
                return (
                    f"{path} changed since it was imported at commit {self.meta.get('commit', '?')[:12]}; "
                    f"run `arena import-pkb {self.checkout}` again so problem versions and hashes follow it"
                )
        return None

    def _load(self, path: Path, key: str, name: str) -> ModuleType:
        error = self.changed()
        if error:
            raise CheckoutChanged(error)
        cache_key = (str(path), self.meta[key])
        if cache_key not in _LOADED:
            # The checkout's own files import their siblings (``from utils...``) from the checkout root.
            if str(self.checkout) not in sys.path:
                sys.path.append(str(self.checkout))
            _LOADED[cache_key] = load_module(path, name)
        return _LOADED[cache_key]

    def reference_solution(self):
        module = self._load(self.reference_file, "file_sha256", f"pkb_reference_{self.number}")
        solve = getattr(module, "solution", None)
        if not callable(solve):
            raise ProblemError(f"{self.reference_file} defines no callable `solution`")
        return solve

    def generator(self):
        module = self._load(self.inputs_file, "inputs_sha256", "pkb_input_generator")
        return module.create_input_tensor

    def original_inputs(
        self,
        rank: int,
        world_size: int,
        seed: int,
        device: torch.device,
        dtype: torch.dtype,
        shape: tuple[int, ...],
        trial: int,
    ) -> tuple:
        import torch

        create = self.generator()
        devices = (
            [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
        )
        # Every rank's call starts from the same global RNG state, as separate processes seeded alike would, so
        # data the generator draws from the global RNG for every rank (replicated weights) stays equal.
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(derived_seed("pkb-global", seed))
            seed_generator(torch.default_generator, "pkb-global", seed)  # the CPU's: its whole state, not 32 bits
            made = create(rank, world_size, self.number, shape, dtype, trial=trial, device=device)
        return tuple(made) if isinstance(made, (tuple, list)) else (made,)

    def modes(
        self, world_size: int, device: torch.device, dtype: torch.dtype, shape: tuple[int, ...]
    ) -> dict[str, str]:
        key = (world_size, str(device), str(dtype), shape)
        if key not in self._modes:
            every = [self.original_inputs(r, world_size, 0, device, dtype, shape, 0) for r in range(world_size)]
            self._modes[key] = input_modes(every)
            del every
        return self._modes[key]

    def make_inputs(
        self, rank: int, world_size: int, seed: int, device: torch.device, dtype: str, base_shape: str, inputs: str
    ) -> tuple:
        import torch

        if inputs not in INPUT_MODES:
            raise ProblemError(f"inputs must be one of {', '.join(INPUT_MODES)}, not {inputs!r}")
        torch_dtype = getattr(torch, dtype)
        shape = parse_shape(base_shape)
        device = torch.device(device)
        original = self.original_inputs(rank, world_size, seed, device, torch_dtype, shape, seed % CHECKOUT_TRIALS)
        if inputs == "original":
            return original
        return randomize(original, self.modes(world_size, device, torch_dtype, shape), seed, rank)
