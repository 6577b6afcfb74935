"""Wrong: partitions as numel // W elements per rank with the remainder on the last rank, instead of the padded
ceil(numel / W) partitions."""

import math

import torch
import torch.distributed as dist


def solution(grads, master, exp_avg, exp_avg_sq, step, loss_scale):
    world, rank = dist.get_world_size(), dist.get_rank()
    numel, shard = grads.numel(), master.numel()
    base = numel // world
    lo = rank * base
    hi = numel if rank == world - 1 else lo + base
    piece = grads[lo:hi][:shard]
    g = torch.zeros_like(master)
    g[: piece.numel()] = piece.float() / loss_scale
    g = g + 0.01 * master
    t = int(step) + 1
    m = exp_avg * 0.9 + 0.1 * g
    v = exp_avg_sq * 0.999 + 0.001 * g * g
    p = master - (1e-3 / (1 - 0.9**t)) * m / (v.sqrt() / math.sqrt(1 - 0.999**t) + 1e-8)
    gathered = torch.empty(world * shard, dtype=grads.dtype, device=grads.device)
    dist.all_gather_into_tensor(gathered, p.to(grads.dtype))
    return gathered[:numel].clone(), p, m, v
