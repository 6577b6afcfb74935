"""Disables the harness from the inside: reaches the running rank module and replaces its tampering check and
its timer with do-nothing versions, then returns garbage."""

import importlib

import torch

try:
    _rank = importlib.import_module("__ma" + "in__")
    _rank.Rank.check_tampering = lambda self: None
    _rank._tampering = lambda: None
except Exception:
    pass


def solution(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
