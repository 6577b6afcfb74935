"""At the turn of the V, rank W-1 feeds its chunk 0 with its own chunk 0's input gradient instead of chunk 1's."""

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
    reqs = dist.batch_isend_irecv(ops) if ops else []
    dw = torch.matmul(x.mT, dy).float()
    for req in reqs:
        req.wait()
    if r == world - 1:
        dy_next[0] = dx[0]
    return dy_next, dw
