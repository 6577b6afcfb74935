"""Vocab-parallel embedding (Megatron VocabParallelEmbedding, no sequence parallelism).

Rank r owns vocabulary rows r*V/W ... (r+1)*V/W - 1 of the embedding table. Every rank sees all token ids; it looks
up the ones in its range, writes zeros for the others, and an all-reduce assembles the full lookup everywhere.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    per_rank = weight.shape[0]
    local = ids - dist.get_rank() * per_rank
    outside = (local < 0) | (local >= per_rank)
    out = F.embedding(local.masked_fill(outside, 0), weight)
    out.masked_fill_(outside.unsqueeze(-1), 0)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, V: int, D: int):
    g = shared_generator(seed, device)
    # Token frequencies fall off with the id (as in BPE vocabularies), so low ranks own more of the lookups.
    u = torch.rand((T,), generator=g, device=g.device, dtype=torch.float64)
    ids = (u.square() * V).long().clamp_(max=V - 1)
    # Make sure the first and last id of every shard occur, where off-by-one range checks go wrong.
    per_rank = V // world_size
    edges = torch.tensor(sorted({e for k in range(world_size) for e in (k * per_rank, (k + 1) * per_rank - 1)}),
                         device=g.device)
    ids[torch.randperm(T, generator=g, device=g.device)[:edges.numel()]] = edges
    weight = randn((per_rank, D), dtype_of(dtype), device, rank_generator(seed, rank, device))
    return (ids.to(device), weight)


def oracle(inputs: list[tuple], T: int, V: int, D: int, **_):
    ids = inputs[0][0]
    table = torch.cat([inp[1] for inp in inputs], dim=0)
    out = F.embedding(ids, table)
    return [out.clone() for _ in inputs]
