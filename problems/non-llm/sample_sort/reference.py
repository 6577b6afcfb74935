"""Distributed sample sort: sort locally, choose W-1 splitters from regular samples, all-to-all the buckets, merge,
then rebalance so that rank r holds exactly the global sorted positions [r*N, (r+1)*N)."""

import torch
import torch.distributed as dist

from problems.common import rank_generator


def _exchange(values: torch.Tensor, send_counts: torch.Tensor) -> torch.Tensor:
    """Uneven all-to-all; the counts are swapped first so every rank knows what it receives."""
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    out = values.new_empty(int(recv_counts.sum()))
    dist.all_to_all_single(out, values, recv_counts.tolist(), send_counts.tolist())
    return out


def solution(keys):
    rank, world = dist.get_rank(), dist.get_world_size()
    n = keys.numel()
    local = keys.sort().values
    # Regular sampling (PSRS): W evenly spaced samples per rank, splitters every W-th of the sorted samples.
    samples = local[torch.arange(world, device=keys.device) * (n // world)]
    every = torch.empty(world * world, dtype=keys.dtype, device=keys.device)
    dist.all_gather_into_tensor(every, samples)
    splitters = every.sort().values[world * torch.arange(1, world, device=keys.device) + world // 2 - 1]
    cuts = torch.searchsorted(local, splitters)
    bounds = torch.cat([cuts.new_zeros(1), cuts, cuts.new_full((1,), n)])
    bucket = _exchange(local, bounds.diff()).sort().values
    # Rebalance: this bucket covers global positions [offset, offset + len); position p belongs to rank p // n.
    sizes = torch.empty(world, dtype=torch.int64, device=keys.device)
    dist.all_gather_into_tensor(sizes, torch.tensor([bucket.numel()], device=keys.device))
    offset = int(sizes[:rank].sum())
    starts = torch.arange(world, device=keys.device) * n
    lo = torch.clamp(starts, min=offset)
    hi = torch.clamp(starts + n, max=offset + bucket.numel())
    return _exchange(bucket, (hi - lo).clamp(min=0))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, keys: int):
    g = rank_generator(seed, rank, device)
    # Each rank's keys follow its own normal distribution, so buckets come out uneven.
    centre, spread = torch.randn(2, generator=g, device=g.device) * 2
    values = torch.randn((keys,), generator=g, device=g.device) * spread.abs().add(0.1) + centre
    return (values.to(device),)


def oracle(inputs: list[tuple], **_):
    ordered = torch.cat([inp[0] for inp in inputs]).sort().values
    return list(ordered.chunk(len(inputs)))
