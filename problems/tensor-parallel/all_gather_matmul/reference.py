"""All-gather + matmul: the forward of Megatron's ColumnParallelLinear under sequence parallelism.

Each rank holds S/W rows of the activations and an (H, N/W) column shard of the weight; the layer gathers the full
sequence, then multiplies it by the local shard.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    full = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(full, x.contiguous())
    return full @ w


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, S: int, H: int, N: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    x = randn((S // world_size, H), dt, device, g)
    # This rank's column block of the weight, scaled so the outputs are O(1).
    w = randn((H, N // world_size), dt, device, g, scale=H ** -0.5)
    return (x, w)


def oracle(inputs: list[tuple], S: int, H: int, N: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    full = torch.cat([inp[0] for inp in inputs], dim=0).to(acc)
    return [(full @ inp[1].to(acc)).to(x0.dtype) for inp in inputs]
