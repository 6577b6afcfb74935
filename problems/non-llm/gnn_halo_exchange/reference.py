"""GNN halo exchange: every partition gathers the rows of its boundary nodes that each neighbour needs, one uneven
all-to-all delivers them, and the halo rows are appended after the partition's own nodes."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, group_generator, rank_generator, randn


def solution(features, send_idx, send_counts, recv_counts):
    nodes = features.shape[0]
    recv_splits = recv_counts.tolist()
    out = torch.empty((nodes + sum(recv_splits), features.shape[1]), dtype=features.dtype, device=features.device)
    out[:nodes] = features
    dist.all_to_all_single(out[nodes:], features.index_select(0, send_idx), recv_splits, send_counts.tolist())
    return out


def _pair_counts(seed: int, lo: int, hi: int, halo_min: int, halo_max: int) -> torch.Tensor:
    """(how many of rank lo's nodes rank hi needs, how many of hi's nodes lo needs): uneven across pairs, drawn from
    the pair's own stream, which both ends draw alike and from which no rank draws its own data. The two directions
    sum to halo_min + halo_max (each uniform over the range): a rank then sends or receives at least the expected
    count per peer, which the roofline's bytes assume, whatever the draw."""
    g = group_generator(seed, ("pair", lo, hi))
    c = int(torch.randint(halo_min, halo_max + 1, (1,), generator=g))
    return torch.tensor([c, halo_min + halo_max - c])


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, nodes: int, dim: int,
                halo_min: int, halo_max: int):
    send_counts = torch.zeros(world_size, dtype=torch.int64)  # none to itself
    recv_counts = torch.zeros(world_size, dtype=torch.int64)
    for peer in range(world_size):
        if peer > rank:
            send_counts[peer], recv_counts[peer] = _pair_counts(seed, rank, peer, halo_min, halo_max)
        elif peer < rank:
            recv_counts[peer], send_counts[peer] = _pair_counts(seed, peer, rank, halo_min, halo_max)
    g = rank_generator(seed, rank)
    features = randn((nodes, dim), dtype_of(dtype), device, g)
    # Each neighbour needs its own subset of this partition's nodes; a node may be needed by several neighbours.
    send_idx = torch.cat([torch.randperm(nodes, generator=g)[:int(c)].sort().values for c in send_counts])
    return features, send_idx.to(device), send_counts.to(device), recv_counts.to(device)


def oracle(inputs: list[tuple], **_):
    outs = []
    for r, (features, _, _, _) in enumerate(inputs):
        halo = []
        for src, (f_src, idx_src, counts_src, _) in enumerate(inputs):
            start = int(counts_src[:r].sum())
            halo.append(f_src[idx_src[start:start + int(counts_src[r])]])
        outs.append(torch.cat([features, *halo]))
    return outs
