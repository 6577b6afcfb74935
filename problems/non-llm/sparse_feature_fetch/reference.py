"""Sparse feature fetch: node features are range-partitioned (uneven ranges); every rank pulls the rows of its
mini-batch's node ids from their owners and returns them in request order."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(features: torch.Tensor, offsets: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    owner = torch.searchsorted(offsets[1:], ids, right=True)
    order = torch.argsort(owner, stable=True)
    send_counts = torch.bincount(owner, minlength=w)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    s_split, r_split = send_counts.tolist(), recv_counts.tolist()
    wanted = ids.new_empty((sum(r_split),))
    dist.all_to_all_single(wanted, ids[order], r_split, s_split)
    rows = features.index_select(0, wanted - offsets[r])
    got = features.new_empty((ids.numel(), features.shape[1]))
    dist.all_to_all_single(got, rows, s_split, r_split)
    out = torch.empty_like(got)
    out[order] = got
    return out


def _offsets(seed: int, world_size: int, nodes_per_rank: int) -> torch.Tensor:
    sizes = (nodes_per_rank * (0.5 + torch.rand(world_size, generator=shared_generator(seed)))).long()
    return torch.cat([torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)])


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                nodes_per_rank: int, dim: int, batch: int):
    offsets = _offsets(seed, world_size, nodes_per_rank)
    total = int(offsets[-1])
    g = rank_generator(seed, rank, device)
    features = randn((int(offsets[rank + 1] - offsets[rank]), dim), dtype_of(dtype), device, g)
    # Skewed popularity (u**3 favours low ranks of popularity, so ids repeat), spread over the id space by a
    # multiplicative hash so hot nodes live on every partition.
    u = torch.rand(batch, generator=g, device=g.device, dtype=torch.float64)
    popular = (u ** 3 * total).long().clamp(max=total - 1)
    ids = (popular * 2654435761) % total
    return (features, offsets.to(device), ids.to(device))


def oracle(inputs: list[tuple], **_):
    table = torch.cat([inp[0] for inp in inputs])  # global id order, since ranges are contiguous and ascending
    return [table[ids].clone() for _, _, ids in inputs]
