"""Applies the SiLU to the up projection instead of the gate."""

import torch
import torch.distributed as dist
import torch.nn.functional as F_


def solution(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    out = ((x @ w_gate) * F_.silu(x @ w_up)) @ w_down
    dist.all_reduce(out)
    return out
