"""ZeRO stage 1: the averaged gradient is already on every rank; each rank owns the optimizer state of one padded
partition of the flat parameters, runs Adam there, and the updated partitions are all-gathered."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randint, randn, shared_generator

LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 1e-3, 0.9, 0.999, 1e-8, 0.01


def adam(master, exp_avg, exp_avg_sq, grad, step):
    """torch.optim.Adam (weight decay added to the gradient) on new tensors; ``step`` is 1-based."""
    grad = grad + WEIGHT_DECAY * master
    exp_avg = exp_avg * BETA1 + (1 - BETA1) * grad
    exp_avg_sq = exp_avg_sq * BETA2 + (1 - BETA2) * grad * grad
    denom = exp_avg_sq.sqrt() / math.sqrt(1 - BETA2 ** step) + EPS
    return master - (LR / (1 - BETA1 ** step)) * exp_avg / denom, exp_avg, exp_avg_sq


def solution(grads, master, exp_avg, exp_avg_sq, step, loss_scale):
    world, rank = dist.get_world_size(), dist.get_rank()
    numel, shard = grads.numel(), master.numel()
    lo, hi = min(rank * shard, numel), min((rank + 1) * shard, numel)
    grad = torch.zeros_like(master)
    grad[: hi - lo] = grads[lo:hi].float() / loss_scale  # padding keeps a zero gradient
    master, exp_avg, exp_avg_sq = adam(master, exp_avg, exp_avg_sq, grad, int(step.item()) + 1)
    gathered = torch.empty(world * shard, dtype=grads.dtype, device=grads.device)
    dist.all_gather_into_tensor(gathered, master.to(grads.dtype))
    return gathered[:numel].clone(), master, exp_avg, exp_avg_sq


def _partition(numel, world_size):
    return -(-numel // world_size)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    shard = _partition(numel, world_size)
    real = max(0, min(shard, numel - rank * shard))
    sg = shared_generator(seed, device)
    loss_scale = torch.tensor(2.0 ** int(randint(8, 17, (), device, sg)), dtype=torch.float32, device=device)
    step = randint(1, 50, (), device, sg)
    # The gradient was all-reduced before the step, so every rank holds the same one (times the loss scale).
    grads = (randn((numel,), torch.float32, device, sg, scale=1e-2) * loss_scale).to(dtype_of(dtype))
    g = rank_generator(seed, rank, device)
    master = randn((shard,), torch.float32, device, g, scale=2e-2)
    exp_avg = randn((shard,), torch.float32, device, g, scale=3e-3)
    exp_avg_sq = (torch.rand((shard,), generator=g, device=g.device) + 0.2).mul_(1e-4).to(device)
    for t in (master, exp_avg, exp_avg_sq):
        t[real:] = 0  # the padding of the last partition holds zeros
    return grads, master, exp_avg, exp_avg_sq, step, loss_scale


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    grads, _, _, _, step, loss_scale = inputs[0]
    numel, shard = grads.numel(), inputs[0][1].numel()
    full_grad = torch.zeros(world * shard, dtype=torch.float64)
    full_grad[:numel] = grads.double() / loss_scale.double()
    states = [adam(inp[1].double(), inp[2].double(), inp[3].double(), full_grad[r * shard:(r + 1) * shard],
                   int(step) + 1) for r, inp in enumerate(inputs)]
    params = torch.cat([s[0] for s in states])[:numel].to(grads.dtype)
    return [(params.clone(), *(t.float() for t in s)) for s in states]
