"""Sends gradients forward like activations, so each rank gets the previous stage's gradient. (With W=2 the previous
and next stage are the same rank, so only W >= 4 exposes it.)"""

import torch
import torch.distributed as dist


def solution(act, grad):
    w, r = dist.get_world_size(), dist.get_rank()
    act_in = torch.empty_like(act)
    grad_in = torch.empty_like(grad)
    reqs = dist.batch_isend_irecv(
        [
            dist.P2POp(dist.isend, act.contiguous(), (r + 1) % w),
            dist.P2POp(dist.irecv, act_in, (r - 1) % w),
            dist.P2POp(dist.isend, grad.contiguous(), (r + 1) % w),
            dist.P2POp(dist.irecv, grad_in, (r - 1) % w),
        ]
    )
    for req in reqs:
        req.wait()
    return act_in, grad_in
