"""Reaches the evaluator's comparison through the module cache (the old in-process module and the judge's new one)
and makes it accept anything, then returns garbage. The judge's modules are not in the sandbox at all."""

import importlib

import torch

for _name in ("evalu" + "ator.correctness", "evalu" + "ator.judge.compare"):
    try:
        _harness = importlib.import_module(_name)
        _harness.compare = lambda *args, **kwargs: None
        _harness.count_bad = lambda *args, **kwargs: None
        _harness.structure = lambda *args, **kwargs: None
    except Exception:
        pass


def solution(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
