"""Distributed 1-hop neighbour sampling: node v is owned by rank v // nodes_per_rank, which stores v's adjacency
(CSR) and one random key per edge. The sample of a seed is its min(fanout, degree) neighbours with the smallest
keys, in ascending key order, padded with -1."""

import torch
import torch.distributed as dist

from problems.common import rank_generator, randint


def _sample(indptr, indices, edge_keys, local, fanout):
    """Rows of (len(local), fanout): the sample of each local node, -1 padded."""
    start = indptr[local]
    deg = indptr[local + 1] - start
    seg = torch.repeat_interleave(torch.arange(local.numel(), device=local.device), deg)
    seg_start = torch.cumsum(deg, 0) - deg
    pos = start[seg] + torch.arange(seg.numel(), device=local.device) - seg_start[seg]
    order = torch.argsort(seg * (edge_keys.numel() + 1) + edge_keys[pos])  # by (segment, key): keys are distinct
    seg, pos = seg[order], pos[order]
    rank_in_seg = torch.arange(seg.numel(), device=local.device) - seg_start[seg]
    keep = rank_in_seg < fanout
    out = torch.full((local.numel(), fanout), -1, dtype=torch.int64, device=local.device)
    out[seg[keep], rank_in_seg[keep]] = indices[pos[keep]]
    return out


def solution(indptr, indices, edge_keys, seeds, fanout):
    w, r = dist.get_world_size(), dist.get_rank()
    n = indptr.numel() - 1
    f = int(fanout)
    owner = seeds // n
    order = torch.argsort(owner, stable=True)
    send_counts = torch.bincount(owner, minlength=w)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    s_split, r_split = send_counts.tolist(), recv_counts.tolist()
    asked = seeds.new_empty((sum(r_split),))
    dist.all_to_all_single(asked, seeds[order], r_split, s_split)
    picks = _sample(indptr, indices, edge_keys, asked - r * n, f)
    got = seeds.new_empty((seeds.numel(), f))
    dist.all_to_all_single(got, picks, s_split, r_split)
    out = torch.empty_like(got)
    out[order] = got
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                nodes_per_rank: int, max_degree: int, batch: int, fanout: int):
    g = rank_generator(seed, rank, device)
    total = nodes_per_rank * world_size
    # Skewed degrees: log-uniform in [1, max_degree], so some nodes have fewer neighbours than fanout.
    u = torch.rand(nodes_per_rank, generator=g, device=g.device)
    deg = ((max_degree + 1) ** u).long().clamp(1, max_degree)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=g.device), deg.cumsum(0)])
    nnz = int(indptr[-1])
    indices = randint(0, total, (nnz,), device, g)
    edge_keys = torch.randperm(nnz, generator=g, device=g.device)  # distinct: no ties in the sample order
    seeds = randint(0, total, (batch,), device, g)
    return (indptr.to(device), indices, edge_keys.to(device), seeds, torch.tensor(fanout, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **params):
    n = inputs[0][0].numel() - 1
    outs = []
    for *_, seeds, fanout in inputs:
        f = int(fanout)
        rows = []
        for v in seeds.tolist():
            indptr, indices, keys = inputs[v // n][:3]
            lo, hi = int(indptr[v % n]), int(indptr[v % n + 1])
            by_key = sorted(zip(keys[lo:hi].tolist(), indices[lo:hi].tolist()))[:f]
            rows.append([nbr for _, nbr in by_key] + [-1] * (f - len(by_key)))
        outs.append(torch.tensor(rows, dtype=torch.int64, device=seeds.device).view(len(rows), f))
    return outs
