"""Treats the pipeline as a line: the first stage receives nothing and returns its own activation."""

import torch
import torch.distributed as dist


def solution(act):
    w, r = dist.get_world_size(), dist.get_rank()
    ops = []
    recv = torch.empty_like(act)
    if r < w - 1:
        ops.append(dist.P2POp(dist.isend, act.contiguous(), r + 1))
    if r > 0:
        ops.append(dist.P2POp(dist.irecv, recv, r - 1))
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return recv if r > 0 else act.clone()
