"""Distributed exact k-NN: every rank searches its own rows of the database for the replicated queries, the
per-shard top-k candidates (distance, global id) are all-gathered, and the k smallest of them are the answer."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator

K = 16


def solution(queries, database):
    rank, world = dist.get_rank(), dist.get_world_size()
    q, x = queries.float(), database.float()
    dist2 = (q * q).sum(1, keepdim=True) - 2 * (q @ x.t()) + (x * x).sum(1)[None, :]
    d, idx = dist2.topk(K, dim=1, largest=False)
    idx = idx + rank * x.shape[0]
    all_d = torch.empty((world * d.shape[0], K), dtype=d.dtype, device=d.device)
    all_idx = torch.empty((world * idx.shape[0], K), dtype=idx.dtype, device=idx.device)
    dist.all_gather_into_tensor(all_d, d)
    dist.all_gather_into_tensor(all_idx, idx)
    n = d.shape[0]
    cand_d = all_d.view(world, n, K).transpose(0, 1).reshape(n, world * K)
    cand_idx = all_idx.view(world, n, K).transpose(0, 1).reshape(n, world * K)
    best, pos = cand_d.topk(K, dim=1, largest=False)
    return best, cand_idx.gather(1, pos)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, queries: int,
                database: int, dim: int):
    dt = dtype_of(dtype)
    shard = database // world_size
    shared = shared_generator(seed)
    q = randn((queries, dim), dt, "cpu", shared)
    # Background rows are far from every query (squared distance near 2 * dim). Each query gets 2K planted rows at
    # squared distances s * (1 + 0.5 j + 0.25 u), j = 0..2K-1: distinct, at least 0.5 s apart, with s = dim / 128.
    s = dim / 128
    slots = torch.randperm(database, generator=shared)[:queries * 2 * K].view(queries, 2 * K)
    radius2 = s * (1 + 0.5 * torch.arange(2 * K) + 0.25 * torch.rand((queries, 1), generator=shared))
    direction = torch.nn.functional.normalize(torch.randn((queries, 2 * K, dim), generator=shared), dim=2)
    planted = (q.float()[:, None, :] + radius2.sqrt()[..., None] * direction).to(dt)
    x = randn((shard, dim), dt, "cpu", rank_generator(seed, rank))
    mine = (slots >= rank * shard) & (slots < (rank + 1) * shard)
    x[slots[mine] - rank * shard] = planted[mine]
    return q.to(device), x.to(device)


def oracle(inputs: list[tuple], **_):
    q = inputs[0][0].double()
    x = torch.cat([inp[1].double() for inp in inputs])
    dist2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    d, idx = dist2.topk(K, dim=1, largest=False)
    return [(d.float(), idx.clone()) for _ in inputs]
