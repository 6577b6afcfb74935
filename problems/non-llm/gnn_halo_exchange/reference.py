"""GNN halo exchange: every partition gathers the rows of its boundary nodes that each neighbour needs, one uneven
all-to-all delivers them, and the halo rows are appended after the partition's own nodes."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(features, send_idx, send_counts, recv_counts):
    nodes = features.shape[0]
    recv_splits = recv_counts.tolist()
    out = torch.empty((nodes + sum(recv_splits), features.shape[1]), dtype=features.dtype, device=features.device)
    out[:nodes] = features
    dist.all_to_all_single(out[nodes:], features.index_select(0, send_idx), recv_splits, send_counts.tolist())
    return out


def _counts(seed: int, world_size: int, halo_min: int, halo_max: int) -> torch.Tensor:
    """counts[src, dst]: how many of src's nodes dst needs; uneven across pairs, none to itself."""
    counts = torch.randint(halo_min, halo_max + 1, (world_size, world_size), generator=shared_generator(seed))
    return counts.fill_diagonal_(0)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, nodes: int, dim: int,
                halo_min: int, halo_max: int):
    g = rank_generator(seed, rank)
    counts = _counts(seed, world_size, halo_min, halo_max)
    features = randn((nodes, dim), dtype_of(dtype), device, g)
    # Each neighbour needs its own subset of this partition's nodes; a node may be needed by several neighbours.
    send_idx = torch.cat([torch.randperm(nodes, generator=g)[:int(c)].sort().values for c in counts[rank]])
    return features, send_idx.to(device), counts[rank].to(device), counts[:, rank].contiguous().to(device)


def oracle(inputs: list[tuple], **_):
    outs = []
    for r, (features, _, _, _) in enumerate(inputs):
        halo = []
        for src, (f_src, idx_src, counts_src, _) in enumerate(inputs):
            start = int(counts_src[:r].sum())
            halo.append(f_src[idx_src[start:start + int(counts_src[r])]])
        outs.append(torch.cat([features, *halo]))
    return outs
