"""Rotary position embedding on sequence-parallel Q and K, then an all-gather along the sequence.

Rank r holds tokens r*S/W ... (r+1)*S/W - 1 of Q and K in Megatron's sequence-first layout (s, b, heads, dim). The
rotation angle of a token depends on its global position, so each rank offsets its positions by r*S/W before
rotating; the rotated shards are then gathered in rank order.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn

BASE = 10000.0


def _rope(x: torch.Tensor, first_position: int) -> torch.Tensor:
    # Angles in float32: theta[p, j] = p * BASE^(-2j/D); the two halves of the head dim share them (rotate-half).
    s, d = x.shape[0], x.shape[-1]
    inv_freq = 1.0 / BASE ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    pos = torch.arange(first_position, first_position + s, dtype=torch.float32, device=x.device)
    theta = torch.outer(pos, inv_freq)
    theta = torch.cat([theta, theta], dim=-1)[:, None, None, :]
    xf = x.float()
    half = d // 2
    rotated = torch.cat([-xf[..., half:], xf[..., :half]], dim=-1)
    return (xf * theta.cos() + rotated * theta.sin()).to(x.dtype)


def _gather_seq(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty((dist.get_world_size() * x.shape[0], *x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous())
    return out


def solution(q: torch.Tensor, k: torch.Tensor):
    first = dist.get_rank() * q.shape[0]
    return _gather_seq(_rope(q, first)), _gather_seq(_rope(k, first))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                S: int, B: int, Hq: int, Hk: int, D: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    s = S // world_size
    return (randn((s, B, Hq, D), dt, device, g), randn((s, B, Hk, D), dt, device, g))


def oracle(inputs: list[tuple], S: int, B: int, Hq: int, Hk: int, D: int, **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    # Full sequence at once, as complex rotations of (x_j, x_{j+D/2}) pairs, in float64.
    pos = torch.arange(S, dtype=acc)
    inv_freq = BASE ** (-torch.arange(0, D, 2, dtype=acc) / D)
    rot = torch.polar(torch.ones(S, D // 2, dtype=acc), torch.outer(pos, inv_freq))[:, None, None, :]

    def rope(x):
        x = x.to(acc)
        z = torch.complex(x[..., : D // 2], x[..., D // 2:]) * rot
        return torch.cat([z.real, z.imag], dim=-1).to(dt)

    q = rope(torch.cat([inp[0] for inp in inputs], dim=0))
    k = rope(torch.cat([inp[1] for inp in inputs], dim=0))
    return [(q.clone(), k.clone()) for _ in inputs]
