"""A tensor-parallel SwiGLU MLP block (Megatron MLP with a column-parallel fc1 and a row-parallel fc2).

The input is replicated. Rank r owns columns r*F/W ... (r+1)*F/W - 1 of the gate and up projections and the same
rows of the down projection, so it computes its slice of the intermediate without communication; the down
projection yields a partial sum of the output, which is all-reduced.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F_

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator


def solution(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    hidden = F_.silu(x @ w_gate) * (x @ w_up)
    out = hidden @ w_down
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int, F: int):
    dt = dtype_of(dtype)
    x = randn((T, H), dt, device, shared_generator(seed, device))
    g = rank_generator(seed, rank, device)
    f = F // world_size
    # Scaled by the full fan-in of each projection, so every stage is O(1).
    w_gate = randn((H, f), dt, device, g, scale=H ** -0.5)
    w_up = randn((H, f), dt, device, g, scale=H ** -0.5)
    w_down = randn((f, H), dt, device, g, scale=F ** -0.5)
    return (x, w_gate, w_up, w_down)


def oracle(inputs: list[tuple], T: int, H: int, F: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    x = x0.to(acc)
    w_gate = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    w_up = torch.cat([inp[2] for inp in inputs], dim=1).to(acc)
    w_down = torch.cat([inp[3] for inp in inputs], dim=0).to(acc)
    out = ((F_.silu(x @ w_gate) * (x @ w_up)) @ w_down).to(x0.dtype)
    return [out.clone() for _ in inputs]
