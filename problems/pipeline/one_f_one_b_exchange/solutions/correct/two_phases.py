import torch
import torch.distributed as dist


def solution(act, grad):
    # The forward ring first, then the backward ring, each as its own batch.
    w, r = dist.get_world_size(), dist.get_rank()
    act_in = torch.empty_like(act)
    grad_in = torch.empty_like(grad)
    for req in dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, act.contiguous(), (r + 1) % w), dist.P2POp(dist.irecv, act_in, (r - 1) % w)]
    ):
        req.wait()
    for req in dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, grad.contiguous(), (r - 1) % w), dist.P2POp(dist.irecv, grad_in, (r + 1) % w)]
    ):
        req.wait()
    return act_in, grad_in
