"""Runs a plain ring per chunk: rank 0 takes rank W-1's activation of the same chunk (not the previous one), and the
first and last stages receive data instead of zeros."""

import torch
import torch.distributed as dist


def solution(acts, grads):
    w, r = dist.get_world_size(), dist.get_rank()
    act_in = torch.empty_like(acts)
    grad_in = torch.empty_like(grads)
    ops = []
    for v in range(acts.shape[0]):
        ops += [
            dist.P2POp(dist.isend, acts[v].contiguous(), (r + 1) % w),
            dist.P2POp(dist.irecv, act_in[v], (r - 1) % w),
        ]
    for v in range(grads.shape[0]):
        ops += [
            dist.P2POp(dist.isend, grads[v].contiguous(), (r - 1) % w),
            dist.P2POp(dist.irecv, grad_in[v], (r + 1) % w),
        ]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return act_in, grad_in
