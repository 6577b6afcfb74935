"""ZeRO stage 1/2 optimizer step: each rank owns 1/W of the flat parameters (fp32 master copy and AdamW moments).
Full bit16 gradients are averaged onto their owners, the owner updates its shard, and the new bit16 parameters are
all-gathered so every rank holds the full model again."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randint, randn, shared_generator

LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 1e-3, 0.9, 0.95, 1e-8, 0.1


def adamw(master, exp_avg, exp_avg_sq, grad, step):
    """torch.optim.AdamW's single-tensor update on new tensors; ``step`` counts this step (1-based)."""
    master = master * (1 - LR * WEIGHT_DECAY)
    exp_avg = exp_avg.lerp(grad, 1 - BETA1)
    exp_avg_sq = exp_avg_sq * BETA2 + (1 - BETA2) * grad * grad
    bias1, bias2 = 1 - BETA1 ** step, 1 - BETA2 ** step
    denom = exp_avg_sq.sqrt() / math.sqrt(bias2) + EPS
    return master - (LR / bias1) * exp_avg / denom, exp_avg, exp_avg_sq


def solution(grads, master, exp_avg, exp_avg_sq, step):
    world = dist.get_world_size()
    shard = master.numel()
    # All-to-all instead of a bit16 reduce-scatter: the owner sums the W chunks exactly in fp32.
    chunks = torch.empty_like(grads)
    dist.all_to_all_single(chunks, grads)
    grad = chunks.view(world, shard).float().sum(0) / world
    master, exp_avg, exp_avg_sq = adamw(master, exp_avg, exp_avg_sq, grad, int(step.item()) + 1)
    params = torch.empty_like(grads)
    dist.all_gather_into_tensor(params, master.to(grads.dtype))
    return params, master, exp_avg, exp_avg_sq


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    shard = numel // world_size
    g = rank_generator(seed, rank, device)
    grads = randn((numel,), dtype_of(dtype), device, g, scale=1e-2)
    master = randn((shard,), torch.float32, device, g, scale=2e-2)
    exp_avg = randn((shard,), torch.float32, device, g, scale=3e-3)
    exp_avg_sq = (torch.rand((shard,), generator=g, device=g.device) + 0.2).mul_(1e-4).to(device)
    step = randint(1, 50, (), device, shared_generator(seed, device))
    return grads, master, exp_avg, exp_avg_sq, step


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    full_grad = sum(inp[0].double() for inp in inputs) / world
    shards = full_grad.chunk(world)
    step = int(inputs[0][4]) + 1
    states = [adamw(inp[1].double(), inp[2].double(), inp[3].double(), shards[r], step)
              for r, inp in enumerate(inputs)]
    params = torch.cat([s[0] for s in states]).to(inputs[0][0].dtype)
    return [(params.clone(), *(t.float() for t in s)) for s in states]
