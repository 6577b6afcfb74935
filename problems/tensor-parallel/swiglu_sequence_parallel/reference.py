"""Megatron's SwiGLU MLP under tensor and sequence parallelism.

Rank r holds tokens r*T/W ... (r+1)*T/W - 1 of the input, columns r*F/W ... (r+1)*F/W - 1 of the gate and up
projections and the same rows of the down projection. The tokens are all-gathered, each rank computes its slice of
the intermediate for every token and a partial sum of the output, and the partials are reduce-scattered so that rank
r ends with the complete output of its own tokens.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F_

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    full = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(full, x.contiguous())
    partial = (F_.silu(full @ w_gate) * (full @ w_up)) @ w_down
    out = torch.empty_like(x)
    dist.reduce_scatter_tensor(out, partial)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int, F: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    f = F // world_size
    x = randn((T // world_size, H), dt, device, g)
    # Scaled by the full fan-in of each projection, so every stage is O(1).
    w_gate = randn((H, f), dt, device, g, scale=H ** -0.5)
    w_up = randn((H, f), dt, device, g, scale=H ** -0.5)
    w_down = randn((f, H), dt, device, g, scale=F ** -0.5)
    return (x, w_gate, w_up, w_down)


def oracle(inputs: list[tuple], T: int, H: int, F: int, **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = torch.cat([inp[0] for inp in inputs], dim=0).to(acc)
    w_gate = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    w_up = torch.cat([inp[2] for inp in inputs], dim=1).to(acc)
    w_down = torch.cat([inp[3] for inp in inputs], dim=0).to(acc)
    out = ((F_.silu(x @ w_gate) * (x @ w_up)) @ w_down).to(dt)
    return [block.clone() for block in out.chunk(len(inputs), dim=0)]
