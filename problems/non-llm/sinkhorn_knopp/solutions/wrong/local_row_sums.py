"""Wrong: normalises prototype rows with this rank's partial sums only (missing the all-reduce), so each rank
balances its own samples as if it had the whole batch."""

import torch
import torch.distributed as dist


def solution(scores):
    world = dist.get_world_size()
    q = torch.exp(scores.float() / 0.05).t()
    k, b = q.shape[0], q.shape[1] * world
    total = q.sum()
    dist.all_reduce(total)
    q = q / total
    for _ in range(3):
        q = q / q.sum(dim=1, keepdim=True) / k
        q = q / q.sum(dim=0, keepdim=True) / b
    return (q * b).t()
