"""Causal ring attention backward over contiguous shards (rank r holds positions [r*S/W, (r+1)*S/W)).

The baseline all-gathers K/V, recomputes the attention of its queries over the visible prefix with autograd (fused
kernels), and reduce-scatters the fp32 dk/dv of the whole sequence so each block's owner gets the sum of every
rank's contribution. It does not use the given out and lse; a solution may."""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from problems.common import dtype_of, group_generator, randn, rank_generator

Q_SCALE = 4.0  # query scale: makes the softmax peaked, as trained attention is, so outputs are not near zero


def solution(q, k, v, out, dout, lse):
    w, r = dist.get_world_size(), dist.get_rank()
    s_local, heads, d = q.shape
    kv = torch.stack([k, v])
    gathered = torch.empty((w * 2, s_local, heads, d), dtype=kv.dtype, device=kv.device)
    dist.all_gather_into_tensor(gathered, kv)
    prefix = gathered.view(w, 2, s_local, heads, d)[:r + 1].permute(1, 3, 0, 2, 4).reshape(2, 1, heads, -1, d)
    with torch.enable_grad():
        qg = q.transpose(0, 1)[None].detach().requires_grad_()
        kg = prefix[0].detach().requires_grad_()
        vg = prefix[1].detach().requires_grad_()
        o = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=causal_lower_right(s_local, (r + 1) * s_local))
        dq, dk, dv = torch.autograd.grad(o, (qg, kg, vg), dout.transpose(0, 1)[None])
    # dk, dv of the whole sequence in fp32: zero for the blocks this rank's queries cannot see.
    partial = torch.zeros((w, 2, s_local, heads, d), dtype=torch.float32, device=q.device)
    partial[:r + 1] = torch.stack([dk[0], dv[0]]).float().view(2, heads, r + 1, s_local, d).permute(2, 0, 3, 1, 4)
    mine = torch.empty((2, s_local, heads, d), dtype=torch.float32, device=q.device)
    dist.reduce_scatter_tensor(mine, partial.view(w * 2, s_local, heads, d))
    # dk and dv are copied out of the one reduce-scattered buffer: outputs must not share memory.
    return dq[0].transpose(0, 1).contiguous(), mine[0].to(k.dtype, copy=True), mine[1].to(v.dtype, copy=True)


def _kv(seed: int, block: int, device, dt, shape):
    """K/V block ``block`` (its owner's k, v): drawn from a stream of its own, which every rank whose queries see the
    block draws alike to build its forward output, and from which no rank draws anything else."""
    g = group_generator(seed, ("kv", block), device)
    return randn(shape, dt, device, g), randn(shape, dt, device, g)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int):
    dt = dtype_of(dtype)
    s_local = seq // world_size
    shape = (s_local, heads, head_dim)
    g = rank_generator(seed, rank, device)
    q = randn(shape, dt, device, g, scale=Q_SCALE)
    dout = randn(shape, dt, device, g)
    keys = [_kv(seed, j, device, dt, shape) for j in range(rank + 1)]
    k, v = keys[rank]
    k_vis = torch.cat([kk for kk, _ in keys]).float()
    v_vis = torch.cat([vv for _, vv in keys]).float()
    # The forward's saved output and log-sum-exp, in fp32, one head at a time to bound memory at the bench size.
    q_pos = torch.arange(s_local, device=device) + rank * s_local
    hidden = torch.arange(k_vis.shape[0], device=device)[None, :] > q_pos[:, None]
    out = torch.empty(shape, dtype=torch.float32, device=device)
    lse = torch.empty((heads, s_local), dtype=torch.float32, device=device)
    for h in range(heads):
        scores = (q[:, h].float() @ k_vis[:, h].T / math.sqrt(head_dim)).masked_fill(hidden, float("-inf"))
        lse[h] = torch.logsumexp(scores, dim=-1)
        out[:, h] = torch.exp(scores - lse[h][:, None]) @ v_vis[:, h]
    return q, k, v, out.to(dt), dout, lse


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    q, k, v = (torch.cat([inp[i] for inp in inputs]).to(torch.float64).requires_grad_() for i in range(3))
    dout = torch.cat([inp[4] for inp in inputs]).to(torch.float64)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim)
    pos = torch.arange(seq)
    scores = scores.masked_fill(pos[None, None, :] > pos[None, :, None], float("-inf"))
    o = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), dout)
    n = seq // w
    return [tuple(g[r * n:(r + 1) * n].to(dt).contiguous() for g in (dq, dk, dv)) for r in range(w)]
