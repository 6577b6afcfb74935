"""GNN halo exchange: every partition gathers the rows of its boundary nodes that each neighbour needs, one uneven
all-to-all delivers them, and the halo rows are appended after the partition's own nodes."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(features, send_idx, send_counts, recv_counts):
    nodes = features.shape[0]
    recv_splits = recv_counts.tolist()
    out = torch.empty((nodes + sum(recv_splits), features.shape[1]), dtype=features.dtype, device=features.device)
    out[:nodes] = features
    dist.all_to_all_single(out[nodes:], features.index_select(0, send_idx), recv_splits, send_counts.tolist())
    return out


def _pair_counts(g: torch.Generator, world_size: int, halo_min: int, halo_max: int) -> torch.Tensor:
    """Row j: (how many of this rank's nodes rank j needs, how many of j's nodes this rank needs), uneven across
    pairs. The first draw of a rank's stream ``g``; a pair's two counts are its lower rank's row for the higher."""
    return torch.randint(halo_min, halo_max + 1, (world_size, 2), generator=g)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, nodes: int, dim: int,
                halo_min: int, halo_max: int):
    g = rank_generator(seed, rank)
    pairs = _pair_counts(g, world_size, halo_min, halo_max)
    send_counts = torch.zeros(world_size, dtype=torch.int64)  # none to itself
    recv_counts = torch.zeros(world_size, dtype=torch.int64)
    for peer in range(world_size):
        if peer > rank:
            send_counts[peer], recv_counts[peer] = pairs[peer]
        elif peer < rank:
            # The pair's counts are the lower peer's draw, made again here from its stream (two counts of a peer's
            # stream are far too little of it to recover the rest).
            recv_counts[peer], send_counts[peer] = _pair_counts(rank_generator(seed, peer), world_size, halo_min,
                                                                halo_max)[rank]
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
