"""Wrong: the global max is all-reduced, but the sum of exponentials is not: each shard normalises by its own sum,
so the softmax part of the gradient is too large by about W."""

import torch
import torch.distributed as dist


def solution(logits, target, grad_output):
    rank = dist.get_rank()
    z = logits.float()
    shard = z.shape[-1]
    m = z.amax(dim=-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    e = torch.exp(z - m[:, None])
    grad = e * (-grad_output / e.sum(dim=-1))[:, None]
    local = target - rank * shard
    owned = (local >= 0) & (local < shard)
    grad.scatter_add_(-1, local.clamp(0, shard - 1)[:, None], (grad_output * owned)[:, None])
    return grad.to(logits.dtype)
