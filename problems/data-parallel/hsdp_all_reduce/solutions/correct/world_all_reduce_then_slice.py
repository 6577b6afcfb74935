"""One fp32 all-reduce over the whole world, then the rank's half (no subgroups, more link bytes)."""
import torch
import torch.distributed as dist


def solution(grad):
    world, rank = dist.get_world_size(), dist.get_rank()
    total = grad.float().clone()
    dist.all_reduce(total)
    half = grad.numel() // 2
    s = rank % 2
    return total[s * half:(s + 1) * half] / world
