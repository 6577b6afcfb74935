"""A whole MoE block in one call: shared expert on every token, plus routed experts sharded over ranks.

Experts are sharded contiguously: rank r holds experts [r*L, (r+1)*L), L = experts / W. Weights are stored as
torch.nn.Linear weights ([out, in]); w13 stacks the gate projection (first ffn rows) over the up projection."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, randn, shared_generator, skewed_router


def _swiglu(x, w13, w2):
    gate, up = (x @ w13.t()).chunk(2, dim=-1)
    return (F.silu(gate) * up) @ w2.t()


def solution(x, topk_ids, topk_weights, w13, w2, shared_w13, shared_w2):
    w = dist.get_world_size()
    tokens, k = topk_ids.shape
    local = w13.shape[0]
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)  # copies grouped by (destination, expert), tokens ascending
    counts = torch.bincount(flat, minlength=local * w)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    in_splits = counts.view(w, local).sum(1).tolist()
    out_splits = recv_counts.view(w, local).sum(1).tolist()
    recv = x.new_empty((sum(out_splits), x.shape[1]))
    dist.all_to_all_single(recv, x.index_select(0, order // k), out_splits, in_splits)

    shared = _swiglu(x, shared_w13, shared_w2).float()  # independent of the exchange

    src = torch.arange(w, device=x.device).repeat_interleave(local)
    expert = torch.arange(local, device=x.device).repeat(w)
    perm = torch.argsort(torch.repeat_interleave(expert * w + src, recv_counts), stable=True)
    grouped = recv.index_select(0, perm)
    y_grouped = torch.cat([_swiglu(rows, w13[e], w2[e])
                           for e, rows in enumerate(grouped.split(recv_counts.view(w, local).sum(0).tolist()))])
    y = torch.empty_like(recv)
    y[perm] = y_grouped
    back = x.new_empty((tokens * k, x.shape[1]))
    dist.all_to_all_single(back, y, in_splits, out_splits)
    shared.index_add_(0, order // k, back.float() * topk_weights.reshape(-1)[order, None])
    return shared.to(x.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, ffn: int, shared_ffn: int, topk: int, experts: int):
    dt = dtype_of(dtype)
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    local = experts // world_size
    x = randn((tokens, hidden), dt, device, g)
    w13 = randn((local, 2 * ffn, hidden), dt, device, g, scale=hidden ** -0.5)
    w2 = randn((local, hidden, ffn), dt, device, g, scale=ffn ** -0.5)
    # The shared expert is replicated: the same weights on every rank.
    sg = shared_generator(seed + 7, device)
    shared_w13 = randn((2 * shared_ffn, hidden), dt, device, sg, scale=hidden ** -0.5)
    shared_w2 = randn((hidden, shared_ffn), dt, device, sg, scale=shared_ffn ** -0.5)
    return (x, top.indices, torch.softmax(top.values, dim=-1), w13, w2, shared_w13, shared_w2)


def oracle(inputs: list[tuple], **_):
    f64 = torch.float64
    w13 = torch.cat([inp[3] for inp in inputs]).to(f64)  # (experts, 2 ffn, hidden), global order
    w2 = torch.cat([inp[4] for inp in inputs]).to(f64)
    outs = []
    for x, ids, wts, _, _, sw13, sw2 in inputs:
        xd = x.to(f64)
        out = _swiglu(xd, sw13.to(f64), sw2.to(f64))
        for t in range(x.shape[0]):
            for slot in range(ids.shape[1]):
                e = int(ids[t, slot])
                out[t] += float(wts[t, slot]) * _swiglu(xd[t:t + 1], w13[e], w2[e])[0]
        outs.append(out.to(x.dtype))
    return outs
