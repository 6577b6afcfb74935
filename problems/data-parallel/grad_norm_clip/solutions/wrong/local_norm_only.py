"""Wrong: clips each rank by the norm of its own shards (no all-reduce), as if the gradients were replicated."""
import torch


def solution(max_norm, *grads):
    sq = sum(g.float().pow(2).sum() for g in grads)
    total_norm = sq.sqrt()
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    return (*(g * coef for g in grads), torch.stack([total_norm, coef]))
