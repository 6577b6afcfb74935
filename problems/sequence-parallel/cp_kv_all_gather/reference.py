"""Context-parallel causal attention with K/V all-gather, on the load-balanced ("zigzag") sequence split.

The sequence is cut into 2W chunks of S/(2W); rank r holds chunks r and 2W-1-r, concatenated in that order,
for q, k and v alike. Every rank all-gathers K and V, puts them back in sequence order and runs causal
attention for each of its two query chunks over the keys up to that chunk's end."""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from problems.common import dtype_of, randn, rank_generator

Q_SCALE = 4.0  # query scale: makes the softmax peaked, as trained attention is, so outputs are not near zero


def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    s_local, heads, d = q.shape
    c = s_local // 2
    kv = torch.stack([k, v])
    gathered = torch.empty((w * 2, s_local, heads, d), dtype=kv.dtype, device=kv.device)
    dist.all_gather_into_tensor(gathered, kv)
    g = gathered.view(w, 2, 2, c, heads, d)  # (rank, k/v, which chunk, chunk rows, H, D)
    # First chunks of ranks 0..W-1 are chunks 0..W-1; second chunks of ranks W-1..0 are chunks W..2W-1.
    ordered = torch.cat([g[:, :, 0], g[:, :, 1].flip(0)], dim=0)  # (2W, 2, c, H, D)
    kv_seq = ordered.permute(1, 3, 0, 2, 4).reshape(2, 1, heads, 2 * w * c, d)  # 4-D for fused kernels
    outs = []
    for half, chunk in ((0, r), (1, 2 * w - 1 - r)):
        end = (chunk + 1) * c
        qh = q[half * c:(half + 1) * c].transpose(0, 1)[None]
        outs.append(F.scaled_dot_product_attention(qh, kv_seq[0, :, :, :end], kv_seq[1, :, :, :end],
                                                   attn_mask=causal_lower_right(c, end)))
    return torch.cat(outs, dim=2)[0].transpose(0, 1).contiguous()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int):
    g = rank_generator(seed, rank, device)
    shape = (seq // world_size, heads, head_dim)
    dt = dtype_of(dtype)
    return (randn(shape, dt, device, g, scale=Q_SCALE), randn(shape, dt, device, g), randn(shape, dt, device, g))


def _positions(rank: int, w: int, seq: int, device) -> torch.Tensor:
    c = seq // (2 * w)
    first = torch.arange(rank * c, (rank + 1) * c, device=device)
    return torch.cat([first, first + (2 * w - 1 - 2 * rank) * c])


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    device = inputs[0][0].device
    pos = torch.cat([_positions(r, w, seq, device) for r in range(w)])
    q, k, v = (torch.cat([inp[i] for inp in inputs]).to(torch.float64) for i in range(3))
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim)
    scores = scores.masked_fill(pos[None, None, :] > pos[None, :, None], float("-inf"))
    out = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v).to(dt)
    s_local = seq // w
    return [out[r * s_local:(r + 1) * s_local].clone() for r in range(w)]
