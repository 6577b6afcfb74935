"""Treats the stages as a line: the first stage receives no activation and the last no gradient (zeros), which is not
this problem's ring."""

import torch
import torch.distributed as dist


def solution(act, grad):
    w, r = dist.get_world_size(), dist.get_rank()
    act_in = torch.zeros_like(act)
    grad_in = torch.zeros_like(grad)
    ops = []
    if r < w - 1:
        ops += [dist.P2POp(dist.isend, act.contiguous(), r + 1), dist.P2POp(dist.irecv, grad_in, r + 1)]
    if r > 0:
        ops += [dist.P2POp(dist.irecv, act_in, r - 1), dist.P2POp(dist.isend, grad.contiguous(), r - 1)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return act_in, grad_in
