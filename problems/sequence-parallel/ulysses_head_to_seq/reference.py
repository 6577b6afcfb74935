"""Ulysses head-to-sequence all-to-all: rank r ends with its sequence block for every head."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    seq, hl, d = x.shape
    # Sequence blocks are already the outermost axis, so x is a valid send buffer as it is.
    recv = torch.empty_like(x)
    dist.all_to_all_single(recv, x.contiguous())
    # recv[j] holds head group j of my sequence block; heads must become the inner axis again.
    return recv.reshape(w, seq // w, hl, d).transpose(0, 1).reshape(seq // w, w * hl, d)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int):
    g = rank_generator(seed, rank, device)
    return (randn((seq, heads // world_size, head_dim), dtype_of(dtype), device, g),)


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    full = torch.cat([inp[0] for inp in inputs], dim=1)
    return [full[r * seq // w:(r + 1) * seq // w].clone() for r in range(w)]
