"""One expert-parallel MoE layer: dispatch token copies to the ranks owning their experts, run each local
expert's SwiGLU MLP on its rows, send the results back and sum each token's copies with its router weights.

Experts are sharded contiguously: rank r holds the weights of experts [r*L, (r+1)*L), L = experts / W."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor,
             w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    tokens, k = topk_ids.shape
    local, _, ffn2 = w1.shape
    experts = local * w
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)  # copies grouped by (destination, expert), tokens in order
    counts = torch.bincount(flat, minlength=experts)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    in_splits = counts.view(w, local).sum(1).tolist()
    out_splits = recv_counts.view(w, local).sum(1).tolist()
    recv = x.new_empty((sum(out_splits), x.shape[1]))
    dist.all_to_all_single(recv, x.index_select(0, order // k), out_splits, in_splits)

    # Received rows are grouped (source, expert); group them by expert for one GEMM per expert.
    src = torch.arange(w, device=x.device).repeat_interleave(local)
    expert = torch.arange(local, device=x.device).repeat(w)
    perm = torch.argsort(torch.repeat_interleave(expert * w + src, recv_counts), stable=True)
    grouped = recv.index_select(0, perm)
    outs = []
    for e, rows in enumerate(grouped.split(recv_counts.view(w, local).sum(0).tolist())):
        gate, up = (rows @ w1[e]).chunk(2, dim=-1)
        outs.append((F.silu(gate) * up) @ w2[e])
    y = torch.empty_like(recv)
    y[perm] = torch.cat(outs)

    back = x.new_empty((tokens * k, x.shape[1]))
    dist.all_to_all_single(back, y, in_splits, out_splits)
    out = torch.zeros((tokens, x.shape[1]), dtype=torch.float32, device=x.device)
    out.index_add_(0, order // k, back.float() * topk_weights.reshape(-1)[order, None].float())
    return out.to(x.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, ffn: int, topk: int, experts: int):
    dt = dtype_of(dtype)
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    topk_ids, topk_weights = top.indices, torch.softmax(top.values, dim=-1)
    local = experts // world_size
    x = randn((tokens, hidden), dt, device, g)
    # Scaled so every GEMM output has unit variance, as with a standard init.
    w1 = randn((local, hidden, 2 * ffn), dt, device, g, scale=hidden ** -0.5)
    w2 = randn((local, ffn, hidden), dt, device, g, scale=ffn ** -0.5)
    return (x, topk_ids, topk_weights, w1, w2)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    local = inputs[0][3].shape[0]
    dt = inputs[0][0].dtype
    f64 = torch.float64
    w1 = torch.cat([inp[3] for inp in inputs]).to(f64)  # (experts, hidden, 2 ffn), global expert order
    w2 = torch.cat([inp[4] for inp in inputs]).to(f64)
    outs = []
    for x, ids, wts, _, _ in inputs:
        out = torch.zeros(x.shape, dtype=f64, device=x.device)
        for e in range(local * w):
            t, slot = (ids == e).nonzero(as_tuple=True)
            if t.numel() == 0:
                continue
            gate, up = (x[t].to(f64) @ w1[e]).chunk(2, dim=-1)
            y = (F.silu(gate) * up) @ w2[e]
            out.index_add_(0, t, y * wts[t, slot].to(f64)[:, None])
        outs.append(out.to(dt))
    return outs
