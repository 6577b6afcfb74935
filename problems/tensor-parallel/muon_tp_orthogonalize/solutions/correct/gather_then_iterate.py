"""The "duplicated" strategy: all-gather the whole matrix once, iterate on it redundantly, keep this rank's columns."""

import math

import torch
import torch.distributed as dist


def solution(g):
    w, r = dist.get_world_size(), dist.get_rank()
    parts = [torch.empty_like(g) for _ in range(w)]
    dist.all_gather(parts, g.contiguous())
    x = torch.cat(parts, dim=1).float()
    x = x / (torch.linalg.vector_norm(x) + 1e-7)
    for _ in range(5):
        a_mat = x @ x.T
        x = 3.4445 * x + (-4.7750 * a_mat + 2.0315 * (a_mat @ a_mat)) @ x
    x = x * (0.2 * math.sqrt(max(x.shape)))
    n = g.shape[1]
    return x[:, r * n : (r + 1) * n].to(g.dtype).contiguous()
