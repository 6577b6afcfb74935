"""Hyena's short causal depthwise convolution with the sequence sharded: y[t, c] = sum_j w[c, j] * x[t - K + 1 + j, c].

Rank r needs the last K-1 rows of rank r-1's shard (zeros before the sequence start): one send/recv pair between
neighbours, then a depthwise conv1d over the halo-extended shard."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, randn, rank_generator, shared_generator


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    channels, kernel = weight.shape
    halo = torch.zeros((kernel - 1, channels), dtype=x.dtype, device=x.device)
    ops = []
    if r + 1 < w:
        ops.append(dist.P2POp(dist.isend, x[-(kernel - 1):].contiguous(), r + 1))
    if r > 0:
        ops.append(dist.P2POp(dist.irecv, halo, r - 1))
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    ext = torch.cat([halo, x]).t()[None]  # (1, C, K-1 + S/W)
    y = F.conv1d(ext, weight[:, None, :], groups=channels)  # cross-correlation: w[c, j] meets x[t - K + 1 + j]
    return y[0].t().contiguous()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, channels: int, kernel: int):
    dt = dtype_of(dtype)
    x = randn((seq // world_size, channels), dt, device, rank_generator(seed, rank, device))
    weight = randn((channels, kernel), dt, device, shared_generator(seed, device), scale=kernel ** -0.5)
    return x, weight


def oracle(inputs: list[tuple], seq: int, channels: int, kernel: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    x = torch.cat([inp[0] for inp in inputs]).to(torch.float64)
    weight = inputs[0][1].to(torch.float64)
    y = torch.zeros_like(x)
    for j in range(kernel):
        lag = kernel - 1 - j  # w[:, j] multiplies x[t - lag]
        y[lag:] += weight[:, j] * x[:seq - lag]
    y = y.to(dt)
    n = seq // w
    return [y[r * n:(r + 1) * n].clone() for r in range(w)]
