"""Compares a rank's output with the expected output: structure, shape, dtype, then values within tolerance.

Called by the rank processes (solution against reference) and by the problem self-check (reference against
oracle). It is imported before any solution code runs and keeps its own references to the torch functions it
uses, so a solution that patches torch afterwards does not change how it is judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from evaluator import wire

# The functions the comparison uses, bound now: built-in functions and methods of torch's C tensor type, which a
# solution cannot replace (it can rebind torch.abs or add Tensor.__sub__, but not change these objects).
_Tensor = torch.Tensor
_TB = torch._C.TensorBase
_isfinite = torch.isfinite
_abs = torch.abs
_sub = torch.sub
_gt = torch.gt
_ne = torch.ne
_where = torch.where
_zeros_like = torch.zeros_like
_logical_and = torch.logical_and
_logical_not = torch.logical_not
_logical_or = torch.logical_or
_equal = torch.equal
_sum = torch.sum
_any = torch.any
_add = torch.add
_mul = torch.mul
_amax = torch.amax
_argmax = torch.argmax
_reshape = _TB.reshape
_int32 = torch.int32
_to = _TB.to
_detach = _TB.detach
_item = _TB.item
_numel = _TB.numel
_float64 = torch.float64
_float32 = torch.float32
_int64 = torch.int64
_strided = torch.strided
_type = type
_tuple = tuple
_list = list
_len = len


@dataclass(frozen=True)
class Mismatch:
    """Why an output was refused, in words a solution author can act on.

    ``gaming``: the output is not a plain tensor at all (a subclass can override how it compares, or run code when
    the harness inspects it) — a broken rule, so the verdict is ``rejected`` rather than ``wrong_output``.
    """

    message: str
    max_abs_error: float | None = None
    bad_fraction: float | None = None
    gaming: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "max_abs_error": self.max_abs_error,
            "bad_fraction": self.bad_fraction,
            "gaming": self.gaming,
        }


_RESULT_TUPLES = wire.result_tuple_types()


def as_tuple(out: Any) -> tuple:
    return _tuple(wire.outputs_of(out, _RESULT_TUPLES))


def structure(actual: Any, expected: Any) -> Mismatch | None:
    """None when ``actual`` has the structure of ``expected``: as many outputs, each a plain dense tensor of the same
    shape, dtype and device. Needs no device synchronisation."""
    act, exp = as_tuple(actual), as_tuple(expected)
    if _len(act) != _len(exp):
        return Mismatch(f"returned {_len(act)} output(s), expected {_len(exp)}")
    for i, (a, e) in enumerate(zip(act, exp)):
        label = f"output {i}" if _len(exp) > 1 else "output"
        if _type(a) is not _Tensor:
            kind = f"{_type(a).__module__}.{_type(a).__qualname__}"
            if isinstance(a, _Tensor):
                return Mismatch(
                    f"{label} is a {kind}, a tensor subclass: outputs must be plain torch.Tensor objects "
                    f"(a subclass can change how it is compared)",
                    gaming=True,
                )
            return Mismatch(f"{label} is a {kind}, expected a plain torch.Tensor")
        if a.layout != _strided:
            return Mismatch(f"{label} has layout {a.layout}, expected a dense tensor")
        if _tuple(a.shape) != _tuple(e.shape):
            return Mismatch(f"{label} has shape {_tuple(a.shape)}, expected {_tuple(e.shape)}")
        if a.dtype != e.dtype:
            return Mismatch(f"{label} has dtype {a.dtype}, expected {e.dtype}")
        if a.device != e.device:
            return Mismatch(f"{label} is on {a.device}, expected {e.device}")
    return None


def _bad_masks(a: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> tuple[Any, Any, Any]:
    """(mask of values out of tolerance, mask of NaN/Inf where the reference is finite or None, abs error or None),
    as tensors on the device: nothing here waits for the device."""
    if e.dtype.is_floating_point or e.dtype.is_complex:
        wide = _float64 if e.device.type == "cpu" else _float32
        a64 = _to(_detach(a), wide)
        e64 = _to(_detach(e), wide)
        finite_expected = _isfinite(e64)
        nonfinite = _logical_and(_logical_not(_isfinite(a64)), finite_expected)
        err = _where(finite_expected, _abs(_sub(a64, e64)), _zeros_like(e64))
        limit = _add(_mul(_abs(_where(finite_expected, e64, _zeros_like(e64))), rtol), atol)
        return _logical_or(_gt(err, limit), nonfinite), nonfinite, _where(nonfinite, _zeros_like(err), err)
    return _ne(a, e), None, None


def _bad_values(a: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> tuple[Any, Any, Any]:
    """(count of values out of tolerance, count of NaN/Inf where the reference is finite, max abs error), as
    tensors on the device: nothing here waits for the device."""
    bad, nonfinite, err = _bad_masks(a, e, atol, rtol)
    count = _sum(bad, dtype=_int64)
    if nonfinite is None:
        return count, _mul(count, 0), None
    return count, _sum(nonfinite, dtype=_int64), _amax(err)


def _first(mask: Any, shape: tuple) -> tuple[int, tuple[int, ...]]:
    """The flat and the multi-dimensional index of the first true value of ``mask`` (one that has one)."""
    flat = _item(_argmax(_to(_reshape(mask, (-1,)), _int32)))
    index, rest = [], flat
    for size in reversed(shape):
        index.append(rest % size if size else 0)
        rest //= size if size else 1
    return flat, _tuple(reversed(index))


def _value(t: Any, flat: int) -> str:
    v = _item(_reshape(_detach(t), (-1,))[flat])
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _first_difference(a: Any, e: Any, mask: Any) -> str:
    """ "first at index (i, j): got x, expected y" for the first value the mask marks."""
    flat, index = _first(mask, _tuple(e.shape))
    where = index[0] if _len(index) == 1 else index
    return f"first at index {where}: got {_value(a, flat)}, expected {_value(e, flat)}"


def compare(actual: Any, expected: Any, atol: float, rtol: float) -> Mismatch | None:
    """None when ``actual`` matches ``expected``; otherwise the first reason it does not.

    Outputs must be plain ``torch.Tensor`` objects (subclasses could override comparisons), of the expected
    shape and dtype, with no NaN or Inf where the expected value is finite.
    """
    wrong = structure(actual, expected)
    if wrong:
        return wrong
    act, exp = as_tuple(actual), as_tuple(expected)
    for i, (a, e) in enumerate(zip(act, exp)):
        label = f"output {i}" if _len(exp) > 1 else "output"
        n = _numel(e)
        if n == 0:
            continue
        bad_mask, nonfinite_mask, err_values = _bad_masks(a, e, atol, rtol)
        n_nonfinite = 0 if nonfinite_mask is None else _item(_sum(nonfinite_mask, dtype=_int64))
        if n_nonfinite:
            return Mismatch(
                f"{label} holds {n_nonfinite} NaN/Inf values where the reference is finite, "
                f"{_first_difference(a, e, nonfinite_mask)}",
                bad_fraction=n_nonfinite / n,
            )
        n_bad = _item(_sum(bad_mask, dtype=_int64))
        if n_bad:
            first = _first_difference(a, e, bad_mask)
            if err_values is None:
                return Mismatch(
                    f"{label}: {n_bad} of {n} values differ (exact match required), {first}", bad_fraction=n_bad / n
                )
            err = _item(_amax(err_values))
            return Mismatch(
                f"{label}: {n_bad} of {n} values differ beyond atol={atol:g}, rtol={rtol:g} "
                f"(max abs error {err:.4g}), {first}",
                max_abs_error=err,
                bad_fraction=n_bad / n,
            )
    return None


def count_bad(actual: Any, expected: Any, atol: float, rtol: float) -> Any:
    """The number of output values out of tolerance, as a tensor on the device (no synchronisation); the caller
    checks ``structure`` first."""
    total = None
    for a, e in zip(as_tuple(actual), as_tuple(expected)):
        if _numel(e) == 0:
            continue
        bad = _bad_values(a, e, atol, rtol)[0]
        total = bad if total is None else _add(total, bad)
    return total


def count_changed(before: tuple, after: tuple) -> Any:
    """The number of input values that differ from what the solution was given, as a tensor on the device."""
    total = None
    for b, a in zip(before, after):
        if _type(b) is _Tensor:
            changed = _sum(_ne(a, b), dtype=_int64) if _tuple(a.shape) == _tuple(b.shape) else None
            if changed is None:
                return None
            total = changed if total is None else _add(total, changed)
    return total


def clone_inputs(inputs: tuple) -> tuple:
    """A separate copy of the inputs, so the reference and the solution each get their own."""
    return _tuple(_TB.clone(x) if _type(x) is _Tensor else x for x in inputs)


def inputs_unchanged(before: tuple, after: tuple) -> str | None:
    """None when the solution left its inputs alone; otherwise which input it changed."""
    for i, (b, a) in enumerate(zip(before, after)):
        if isinstance(b, _Tensor):
            if _type(a) is not _Tensor or _tuple(a.shape) != _tuple(b.shape) or not _equal(a, b):
                return f"input {i} was modified; a solution must not write to its inputs"
    return None
