"""Computes sum((q - x)^2) directly (no norm expansion), gathers the candidates as lists and merges with a sort."""

import torch
import torch.distributed as dist


def solution(queries, database):
    rank, world = dist.get_rank(), dist.get_world_size()
    q, x = queries.float(), database.float()
    d2 = torch.stack([((x - qi) ** 2).sum(1) for qi in q])
    d, idx = d2.sort(dim=1)
    d, idx = d[:, :16].contiguous(), (idx[:, :16] + rank * x.shape[0]).contiguous()
    ds = [torch.empty_like(d) for _ in range(world)]
    ids = [torch.empty_like(idx) for _ in range(world)]
    dist.all_gather(ds, d)
    dist.all_gather(ids, idx)
    merged, order = torch.cat(ds, dim=1).sort(dim=1)
    return merged[:, :16].contiguous(), torch.cat(ids, dim=1).gather(1, order[:, :16])
