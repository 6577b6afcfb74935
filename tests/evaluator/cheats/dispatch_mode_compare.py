"""Leaves a torch function mode active that turns every "greater than" and "not equal" into all-false, so a
tolerance check finds nothing wrong, and returns garbage."""

import torch
from torch.overrides import TorchFunctionMode


class Blind(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in ("gt", "__gt__", "ne", "__ne__", "logical_or", "any"):
            return torch.zeros_like(result, dtype=torch.bool)
        return result


Blind().__enter__()


def solution(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
