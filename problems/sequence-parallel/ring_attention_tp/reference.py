"""Causal attention on a TP x CP mesh. Global rank r = cp_rank * tp + tp_rank (TP fastest, as Megatron orders its
groups). The rank holds heads [tp_rank*H/tp, (tp_rank+1)*H/tp) for the sequence chunks cp_rank and 2*CP-1-cp_rank of
the sequence cut into 2*CP equal chunks (the zigzag split that balances causal work).

The baseline all-gathers K/V inside the rank's CP group (a process group of the ranks sharing its tp_rank) and
runs one causal attention call per local query chunk over the keys before it."""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from problems.common import dtype_of, randn, rank_generator

Q_SCALE = 4.0  # query scale: makes the softmax peaked, as trained attention is, so outputs are not near zero
_GROUPS: dict = {}


def _cp_group(tp: int):
    """The CP process group of this rank, created once per world (every rank creates every group, in order)."""
    key = (id(dist.group.WORLD), dist.get_world_size(), tp)
    if key not in _GROUPS:
        w = dist.get_world_size()
        groups = [dist.new_group(list(range(t, w, tp))) for t in range(tp)]
        _GROUPS[key] = groups[dist.get_rank() % tp]
    return _GROUPS[key]


def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, tp: torch.Tensor) -> torch.Tensor:
    tp = int(tp.item())
    w, r = dist.get_world_size(), dist.get_rank()
    cp, cp_rank = w // tp, r // tp
    s_local, heads, d = q.shape
    n = s_local // 2  # chunk length
    kv = torch.stack([k, v])
    gathered = torch.empty((cp * 2, s_local, heads, d), dtype=kv.dtype, device=kv.device)
    dist.all_gather_into_tensor(gathered, kv, group=_cp_group(tp))
    # (CP, 2, 2 chunks, n, H, D) -> the 2*CP chunks in sequence order: chunk j of CP rank c is chunk c (j = 0)
    # or 2*CP-1-c (j = 1).
    blocks = gathered.view(cp, 2, 2, n, heads, d)
    order = [blocks[c, :, 0] for c in range(cp)] + [blocks[c, :, 1] for c in reversed(range(cp))]
    kv_seq = torch.stack(order, dim=1).reshape(2, 2 * cp * n, heads, d).permute(0, 2, 1, 3)  # (2, H, S, D)
    outs = []
    for j, chunk in enumerate((cp_rank, 2 * cp - 1 - cp_rank)):
        qc = q[j * n:(j + 1) * n].transpose(0, 1)[None]
        visible = (chunk + 1) * n
        outs.append(F.scaled_dot_product_attention(qc, kv_seq[0, None, :, :visible], kv_seq[1, None, :, :visible],
                                                   attn_mask=causal_lower_right(n, visible))[0])
    return torch.cat(outs, dim=1).transpose(0, 1).contiguous()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int, tp: int):
    g = rank_generator(seed, rank, device)
    shape = (seq * tp // world_size, heads // tp, head_dim)
    dt = dtype_of(dtype)
    q = randn(shape, dt, device, g, scale=Q_SCALE)
    k = randn(shape, dt, device, g)
    v = randn(shape, dt, device, g)
    return q, k, v, torch.tensor(tp, dtype=torch.int64, device=device)


def _positions(cp_rank: int, cp: int, n: int) -> torch.Tensor:
    return torch.cat([torch.arange(cp_rank * n, (cp_rank + 1) * n),
                      torch.arange((2 * cp - 1 - cp_rank) * n, (2 * cp - cp_rank) * n)])


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, tp: int, **_):
    w = len(inputs)
    cp, hl, n = w // tp, heads // tp, seq // (2 * w // tp)
    dt = inputs[0][0].dtype
    full = torch.zeros((3, seq, heads, head_dim), dtype=torch.float64)
    for r, inp in enumerate(inputs):
        pos = _positions(r // tp, cp, n)
        h0 = (r % tp) * hl
        for i in range(3):
            full[i, pos, h0:h0 + hl] = inp[i].to(torch.float64)
    q, k, v = full
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim)
    p = torch.arange(seq)
    scores = scores.masked_fill(p[None, None, :] > p[None, :, None], float("-inf"))
    out = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v)
    return [out[_positions(r // tp, cp, n), (r % tp) * hl:(r % tp + 1) * hl].to(dt).contiguous() for r in range(w)]
