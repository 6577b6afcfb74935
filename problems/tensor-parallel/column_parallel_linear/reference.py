"""Column-parallel linear (Megatron ColumnParallelLinear, gather_output=True, no sequence parallelism).

The input is replicated; rank r owns columns r*N/W ... (r+1)*N/W - 1 of the weight and bias, computes that block of
the output, and the blocks are gathered along the last dim so every rank ends with the full output.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator


def solution(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    local = torch.addmm(b, x, w)
    rows, cols = local.shape
    blocks = torch.empty((world * rows, cols), dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(blocks, local)
    # The gather stacks the blocks along dim 0; the layer's output puts them side by side.
    return blocks.view(world, rows, cols).permute(1, 0, 2).reshape(rows, world * cols)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, B: int, H: int, N: int):
    dt = dtype_of(dtype)
    x = randn((B, H), dt, device, shared_generator(seed, device))
    g = rank_generator(seed, rank, device)
    w = randn((H, N // world_size), dt, device, g, scale=H ** -0.5)
    b = randn((N // world_size,), dt, device, g)
    return (x, w, b)


def oracle(inputs: list[tuple], B: int, H: int, N: int, **_):
    x = inputs[0][0]
    acc = accumulate_dtype(x.dtype)
    w = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    b = torch.cat([inp[2] for inp in inputs]).to(acc)
    out = (x.to(acc) @ w + b).to(x.dtype)
    return [out.clone() for _ in inputs]
