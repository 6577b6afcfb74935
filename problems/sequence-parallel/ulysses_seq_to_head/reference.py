"""Ulysses sequence-to-head all-to-all: rank r ends with the whole sequence for its H/W heads."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    s_local, heads, d = x.shape
    # Chunk j of the send buffer must hold head group j, so the head axis goes outermost before the exchange.
    send = x.reshape(s_local, w, heads // w, d).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    # recv[j] is sequence block j for my heads; stacking blocks in rank order restores the sequence.
    return recv.reshape(w * s_local, heads // w, d)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int):
    g = rank_generator(seed, rank, device)
    return (randn((seq // world_size, heads, head_dim), dtype_of(dtype), device, g),)


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    full = torch.cat([inp[0] for inp in inputs], dim=0)
    return [full[:, r * heads // w:(r + 1) * heads // w].clone() for r in range(w)]
