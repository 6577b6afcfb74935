"""Keeps Q as diag(r) exp(scores/eps)^T diag(c) and only updates the scaling vectors with matrix-vector products,
never rewriting the matrix until the end (the initial total-sum division cancels in the first row step)."""

import torch
import torch.distributed as dist


def solution(scores):
    world = dist.get_world_size()
    e = torch.exp(scores.float() / 0.05)  # [local samples, prototypes]
    local, prototypes = e.shape
    samples = local * world
    r = torch.ones(prototypes, dtype=torch.float32, device=e.device)
    c = torch.ones(local, dtype=torch.float32, device=e.device)
    for _ in range(3):
        rows = r * (e.t() @ c)
        dist.all_reduce(rows)
        r = r / (rows * prototypes)
        cols = c * (e @ r)
        c = c / (cols * samples)
    return e * r[None, :] * (c * samples)[:, None]
