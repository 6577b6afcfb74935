"""Wrong: keeps the half numbered by the replica index (rank // 2) instead of the shard index (rank % 2)."""
import torch
import torch.distributed as dist


def solution(grad):
    world, rank = dist.get_world_size(), dist.get_rank()
    total = grad.float().clone()
    dist.all_reduce(total)
    half = grad.numel() // 2
    s = (rank // 2) % 2
    return total[s * half:(s + 1) * half] / world
