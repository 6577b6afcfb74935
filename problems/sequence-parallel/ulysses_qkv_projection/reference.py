"""Ulysses QKV projection: each rank projects its own tokens with the full (replicated) QKV weight, then one
all-to-all turns the (S/W, 3, H, D) result into (3, S, H/W, D): all tokens, this rank's heads."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, randn, rank_generator, shared_generator


def solution(x: torch.Tensor, w_qkv: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    s_local = x.shape[0]
    hidden, _, heads, d = w_qkv.shape
    hl = heads // w
    qkv = (x @ w_qkv.view(hidden, -1)).view(s_local, 3, w, hl, d)  # head group j is the slice [:, :, j]
    send = qkv.permute(2, 1, 0, 3, 4).contiguous()  # (W, 3, S/W, H/W, D)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    # recv[j] holds sequence block j of this rank's heads.
    return recv.permute(1, 0, 2, 3, 4).reshape(3, w * s_local, hl, d)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, hidden: int, heads: int, head_dim: int):
    dt = dtype_of(dtype)
    x = randn((seq // world_size, hidden), dt, device, rank_generator(seed, rank, device))
    w_qkv = randn((hidden, 3, heads, head_dim), dt, device, shared_generator(seed, device), scale=hidden ** -0.5)
    return x, w_qkv


def oracle(inputs: list[tuple], seq: int, hidden: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = torch.cat([inp[0] for inp in inputs]).to(acc)
    qkv = torch.einsum("sk,kchd->schd", x, inputs[0][1].to(acc))
    hl = heads // w
    outs = []
    for r in range(w):
        outs.append(qkv[:, :, r * hl:(r + 1) * hl].permute(1, 0, 2, 3).to(dt).contiguous())  # (3, S, H/W, D)
    return outs
