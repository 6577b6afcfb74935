"""Wrong: all-reduces the ranks' norms instead of their squared norms, overestimating the global norm."""
import torch
import torch.distributed as dist


def solution(max_norm, *grads):
    local = sum(g.float().pow(2).sum() for g in grads).sqrt()
    dist.all_reduce(local)
    coef = (max_norm / (local + 1e-6)).clamp(max=1.0)
    return (*(g * coef for g in grads), torch.stack([local, coef]))
