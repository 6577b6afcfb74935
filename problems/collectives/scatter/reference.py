"""Scatter from rank 0: rank 0's (W*R, C) tensor is cut into W blocks of R rows; rank r returns block r."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    out = torch.empty((x.shape[0] // world, x.shape[1]), dtype=x.dtype, device=x.device)
    blocks = list(x.contiguous().chunk(world, dim=0)) if rank == 0 else None
    dist.scatter(out, blocks, src=0)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, R: int, C: int):
    # Every rank gets a tensor of the same shape so it knows the block size, but only rank 0's contents matter;
    # the others are random too, so slicing one's own input is caught.
    return (randn((world_size * R, C), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], R: int, C: int, **_):
    return [block.clone() for block in inputs[0][0].chunk(len(inputs), dim=0)]
