"""One KOALA-V (vanilla Kalman optimizer) step on parameters sharded ZeRO-style.

The parameters x (flat, n = W * S elements, fp32) are the Kalman filter's state with a scalar covariance P; the
training loss is a noisy observation of how far x is from an optimum of loss 0, with the gradient as the
observation matrix. Rank r holds shard r of x and a full local gradient and loss of its own batch:

    g = mean over ranks of grad                (float32)
    L = mean of the local losses,  R = max(population variance of the local losses, R_MIN)
    P- = P + Q                                 (predict)
    S = P- * |g|^2 + R                         (innovation variance, |g| over all n elements)
    x <- x - (P- / S) * L * g                  (update, target loss 0)
    P <- P- - P-^2 * |g|^2 / S

Each rank returns the full updated x (all-gathered) and [P, L, S]."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator, shared_generator

Q = 0.1  # process noise added to the covariance by the predict step
R_MIN = 0.01  # floor of the observation noise


def solution(param_shard, grad, loss, covariance):
    w, rank = dist.get_world_size(), dist.get_rank()
    s = param_shard.numel()
    g = torch.empty(s, dtype=torch.float32, device=grad.device)
    dist.reduce_scatter_tensor(g, grad.float())
    g.div_(w)
    stats = torch.stack([loss, loss * loss, g.pow(2).sum()])
    dist.all_reduce(stats)
    mean = stats[0] / w
    r = torch.clamp(stats[1] / w - mean * mean, min=R_MIN)
    p_pred = covariance + Q
    innovation = p_pred * stats[2] + r
    new_shard = param_shard - (p_pred / innovation * mean) * g
    params = torch.empty(w * s, dtype=torch.float32, device=grad.device)
    dist.all_gather_into_tensor(params, new_shard)
    p_new = p_pred - p_pred * p_pred * stats[2] / innovation
    return params, torch.stack([p_new, mean, innovation])


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    if numel % world_size:
        raise ValueError("numel must divide by W")
    sg = shared_generator(seed, device)
    blocks = 64
    # Gradient blocks of very different magnitudes (log-normal), a direction shared by every rank plus per-rank
    # noise, scaled so the averaged gradient has a norm near 1 (as after clipping).
    block_scale = torch.exp(randn((blocks,), torch.float32, device, sg)).repeat_interleave(-(-numel // blocks))[:numel]
    common = randn((numel,), torch.float32, device, sg)
    params = randn((numel,), torch.float32, device, sg, scale=0.02)
    covariance = 0.5 + torch.rand((), generator=sg, device=device)
    g = rank_generator(seed, rank, device)
    noise = randn((numel,), torch.float32, device, g)
    grad = ((common + noise) * block_scale / (block_scale.pow(2).mean().sqrt() * numel ** 0.5)).to(dtype_of(dtype))
    loss = 2.0 + 0.3 * randn((), torch.float32, device, g)
    s = numel // world_size
    return params[rank * s:(rank + 1) * s].clone(), grad, loss, covariance.to(torch.float32)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    x = torch.cat([i[0] for i in inputs]).double()
    g = sum(i[1].double() for i in inputs) / w
    losses = torch.stack([i[2] for i in inputs]).double()
    mean = losses.mean()
    r = torch.clamp(losses.var(unbiased=False), min=R_MIN)
    p_pred = inputs[0][3].double() + Q
    norm2 = (g * g).sum()
    innovation = p_pred * norm2 + r
    params = (x - p_pred / innovation * mean * g).float()
    stats = torch.stack([p_pred - p_pred ** 2 * norm2 / innovation, mean, innovation]).float()
    return [(params.clone(), stats.clone()) for _ in range(w)]
