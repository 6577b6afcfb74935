"""Distributed exact k-NN: every rank searches its own rows of the database for the replicated queries, the
per-shard top-k candidates (distance, global id) are all-gathered, and the k smallest of them are the answer."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator

K = 16


# Database rows per distance tile: the (queries x rows) float32 tile stays at a few GiB at bench size, whatever W.
CHUNK = 1 << 20


def solution(queries, database):
    rank, world = dist.get_rank(), dist.get_world_size()
    q = queries.float()
    qq = (q * q).sum(1, keepdim=True)
    d = torch.full((q.shape[0], 0), float("inf"), device=q.device)
    idx = torch.zeros((q.shape[0], 0), dtype=torch.int64, device=q.device)
    for start in range(0, database.shape[0], CHUNK):  # running top-k over tiles of the shard
        x = database[start:start + CHUNK].float()
        dist2 = qq - 2 * (q @ x.t()) + (x * x).sum(1)[None, :]
        td, ti = dist2.topk(min(K, x.shape[0]), dim=1, largest=False)
        d, pos = torch.cat([d, td], 1).topk(min(K, d.shape[1] + td.shape[1]), dim=1, largest=False)
        idx = torch.cat([idx, ti + start], 1).gather(1, pos)
    idx = idx + rank * database.shape[0]
    all_d = torch.empty((world * d.shape[0], K), dtype=d.dtype, device=d.device)
    all_idx = torch.empty((world * idx.shape[0], K), dtype=idx.dtype, device=idx.device)
    dist.all_gather_into_tensor(all_d, d.contiguous())
    dist.all_gather_into_tensor(all_idx, idx.contiguous())
    n = d.shape[0]
    cand_d = all_d.view(world, n, K).transpose(0, 1).reshape(n, world * K)
    cand_idx = all_idx.view(world, n, K).transpose(0, 1).reshape(n, world * K)
    best, pos = cand_d.topk(K, dim=1, largest=False)
    return best, cand_idx.gather(1, pos)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, queries: int,
                database: int, dim: int):
    dt = dtype_of(dtype)
    shard = database // world_size
    shared = shared_generator(seed, device)
    q = randn((queries, dim), dt, device, shared)
    # Background rows are far from every query (squared distance near 2 * dim). Each query gets 2K planted rows at
    # squared distances s * (1 + 0.75 j + 0.25 u), j = 0..2K-1, u in [0, 1) per row: distinct, at least 0.5 s
    # apart, with s = dim / 128. The (query, j) pairs are dealt to the ranks by a shared random permutation, the same
    # number to each rank in all but unevenly per query, so a query's neighbours are spread unevenly over the shards.
    # Everything else about a planted row (its position in the shard, its u, its direction) is the owning rank's own
    # draw: no rank knows its peers' neighbours, or the answer, before it hears from them.
    s = dim / 128
    levels = 2 * K
    per = -(-queries * levels // world_size)  # pairs per rank (the last ranks' surplus, if any, is never dealt)
    if per > shard:
        raise ValueError(f"{queries} queries x {levels} planted rows do not fit {world_size} shards of {shard} rows")
    deal = torch.rand((world_size * per,), generator=shared, device=shared.device).argsort()
    pairs = deal[rank * per:(rank + 1) * per]
    dealt = pairs < queries * levels
    pairs = torch.where(dealt, pairs, 0)
    query, level = pairs // levels, pairs % levels
    g = rank_generator(seed, rank, device)
    x = randn((shard + 1, dim), dt, device, g)  # the spare last row takes the pairs not dealt, and is dropped
    slots = torch.randperm(shard, generator=g, device=g.device)[:per]
    u = torch.rand((per,), generator=g, device=g.device)
    direction = torch.nn.functional.normalize(torch.randn((per, dim), generator=g, device=g.device), dim=1)
    radius2 = s * (1 + 0.75 * level + 0.25 * u)
    planted = q.float()[query] + radius2.sqrt()[:, None] * direction
    rows = torch.where(dealt, slots, shard)
    x.index_put_((rows,), planted.to(dt).to(device))
    return q, x[:shard]


def oracle(inputs: list[tuple], **_):
    q = inputs[0][0].double()
    x = torch.cat([inp[1].double() for inp in inputs])
    dist2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    d, idx = dist2.topk(K, dim=1, largest=False)
    return [(d.float(), idx.clone()) for _ in inputs]
