"""Wrong: returns Euclidean distances (square roots) where the statement asks for squared L2 distances."""

import torch
import torch.distributed as dist


def solution(queries, database):
    rank, world = dist.get_rank(), dist.get_world_size()
    q, x = queries.float(), database.float()
    d, idx = torch.cdist(q, x).topk(16, dim=1, largest=False)
    idx = idx + rank * x.shape[0]
    ds = [torch.empty_like(d) for _ in range(world)]
    ids = [torch.empty_like(idx) for _ in range(world)]
    dist.all_gather(ds, d)
    dist.all_gather(ids, idx)
    best, pos = torch.cat(ds, dim=1).topk(16, dim=1, largest=False)
    return best, torch.cat(ids, dim=1).gather(1, pos)
