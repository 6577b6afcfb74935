"""Skips the all-gather and all-reduces the partials of each rank's own tokens, summing different tokens together."""

import torch.distributed as dist
import torch.nn.functional as F_


def solution(x, w_gate, w_up, w_down):
    out = (F_.silu(x @ w_gate) * (x @ w_up)) @ w_down
    dist.all_reduce(out)
    return out
