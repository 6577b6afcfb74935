"""Compares a rank's output with the expected output: structure, shape, dtype, then values within tolerance.

Called by the rank processes (solution against reference) and by the problem self-check (reference against
oracle). It is imported before any solution code runs and keeps its own references to the torch functions it
uses, so a solution that patches torch afterwards does not change how it is judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

_Tensor = torch.Tensor
_isfinite = torch.isfinite
_abs = torch.abs
_float64 = torch.float64
_float32 = torch.float32


@dataclass(frozen=True)
class Mismatch:
    """Why an output was refused, in words a solution author can act on."""

    message: str
    max_abs_error: float | None = None
    bad_fraction: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "max_abs_error": self.max_abs_error, "bad_fraction": self.bad_fraction}


def as_tuple(out: Any) -> tuple:
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


def compare(actual: Any, expected: Any, atol: float, rtol: float) -> Mismatch | None:
    """None when ``actual`` matches ``expected``; otherwise the first reason it does not.

    Outputs must be plain ``torch.Tensor`` objects (subclasses could override comparisons), of the expected
    shape and dtype, with no NaN or Inf where the expected value is finite.
    """
    act, exp = as_tuple(actual), as_tuple(expected)
    if len(act) != len(exp):
        return Mismatch(f"returned {len(act)} output(s), expected {len(exp)}")
    for i, (a, e) in enumerate(zip(act, exp)):
        label = f"output {i}" if len(exp) > 1 else "output"
        if type(a) is not _Tensor:
            return Mismatch(f"{label} is a {type(a).__module__}.{type(a).__qualname__}, expected a plain torch.Tensor")
        if a.layout != torch.strided:
            return Mismatch(f"{label} has layout {a.layout}, expected a dense tensor")
        if tuple(a.shape) != tuple(e.shape):
            return Mismatch(f"{label} has shape {tuple(a.shape)}, expected {tuple(e.shape)}")
        if a.dtype != e.dtype:
            return Mismatch(f"{label} has dtype {a.dtype}, expected {e.dtype}")
        if a.device != e.device:
            return Mismatch(f"{label} is on {a.device}, expected {e.device}")
        if e.numel() == 0:
            continue
        if e.dtype.is_floating_point or e.dtype.is_complex:
            wide = _float64 if e.device.type == "cpu" else _float32
            a64 = a.detach().to(wide)
            e64 = e.detach().to(wide)
            finite_expected = _isfinite(e64)
            nonfinite = (~_isfinite(a64)) & finite_expected
            if bool(nonfinite.any()):
                return Mismatch(f"{label} holds {int(nonfinite.sum())} NaN/Inf values where the reference is finite",
                                bad_fraction=float(nonfinite.sum()) / e.numel())
            err = _abs(a64 - e64)
            err = torch.where(finite_expected, err, torch.zeros_like(err))
            bad = err > (atol + rtol * _abs(torch.where(finite_expected, e64, torch.zeros_like(e64))))
            if bool(bad.any()):
                n_bad = int(bad.sum())
                max_err = float(err.max())
                return Mismatch(f"{label}: {n_bad} of {e.numel()} values differ beyond atol={atol:g}, rtol={rtol:g} "
                                f"(max abs error {max_err:.4g})", max_abs_error=max_err, bad_fraction=n_bad / e.numel())
        else:
            bad = a != e
            if bool(bad.any()):
                n_bad = int(bad.sum())
                return Mismatch(f"{label}: {n_bad} of {e.numel()} values differ (exact match required)",
                                bad_fraction=n_bad / e.numel())
    return None


def clone_inputs(inputs: tuple) -> tuple:
    """A separate copy of the inputs, so the reference and the solution each get their own."""
    return tuple(x.clone() if isinstance(x, _Tensor) else x for x in inputs)


def inputs_unchanged(before: tuple, after: tuple) -> str | None:
    """None when the solution left its inputs alone; otherwise which input it changed."""
    for i, (b, a) in enumerate(zip(before, after)):
        if isinstance(b, _Tensor):
            if tuple(a.shape) != tuple(b.shape) or not bool(torch.equal(a, b)):
                return f"input {i} was modified; a solution must not write to its inputs"
    return None
