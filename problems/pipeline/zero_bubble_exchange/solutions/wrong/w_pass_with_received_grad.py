"""Runs the deferred W pass with the gradient just received instead of the one B used: dw = xᵀ @ dy_next."""

import torch
import torch.distributed as dist


def solution(x, w, dy):
    world, r = dist.get_world_size(), dist.get_rank()
    dx = torch.matmul(dy, w.mT)
    dy_next = torch.zeros_like(dy)
    ops = []
    if r > 0:
        ops += [dist.P2POp(dist.isend, dx[0].contiguous(), r - 1), dist.P2POp(dist.irecv, dy_next[1], r - 1)]
    if r < world - 1:
        ops += [dist.P2POp(dist.irecv, dy_next[0], r + 1), dist.P2POp(dist.isend, dx[1].contiguous(), r + 1)]
    for req in dist.batch_isend_irecv(ops) if ops else []:
        req.wait()
    if r == world - 1:
        dy_next[0] = dx[1]
    return dy_next, torch.matmul(x.mT, dy_next).float()
