"""MoE dispatch: every (token, chosen expert) copy travels to the rank owning that expert.

Experts are sharded contiguously: rank r owns experts [r*L, (r+1)*L), L = experts / W. Each rank returns the
copies it received sorted by (local expert, source rank, source token index), plus tokens per local expert."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, topk_ids: torch.Tensor, experts: torch.Tensor):
    experts = int(experts)
    w = dist.get_world_size()
    tokens, k = topk_ids.shape
    local = experts // w
    flat = topk_ids.reshape(-1)
    # A stable sort by expert groups copies by destination rank, then expert, keeping token order inside.
    order = torch.argsort(flat, stable=True)
    send = x.index_select(0, order // k)
    counts = torch.bincount(flat, minlength=experts)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)  # recv_counts[j*L + e]: copies rank j sends to my expert e
    in_splits = counts.view(w, local).sum(1).tolist()
    out_splits = recv_counts.view(w, local).sum(1).tolist()
    recv = x.new_empty((sum(out_splits), x.shape[1]))
    dist.all_to_all_single(recv, send, out_splits, in_splits)
    # Received blocks come as (source rank, local expert); the contract wants (local expert, source rank).
    src = torch.arange(w, device=x.device).repeat_interleave(local)
    expert = torch.arange(local, device=x.device).repeat(w)
    block_key = expert * w + src
    row_key = torch.repeat_interleave(block_key, recv_counts)
    recv = recv.index_select(0, torch.argsort(row_key, stable=True))
    return recv, recv_counts.view(w, local).sum(0)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, topk: int, experts: int):
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    topk_ids = top.indices
    x = randn((tokens, hidden), dtype_of(dtype), device, g)
    return (x, topk_ids, torch.tensor(experts, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    experts = int(inputs[0][2])
    local = experts // w
    tokens, k = inputs[0][1].shape
    device = inputs[0][0].device
    token_idx = torch.arange(tokens, device=device).repeat_interleave(k)
    e = torch.cat([inp[1].reshape(-1) for inp in inputs])
    src = torch.arange(w, device=device).repeat_interleave(tokens * k)
    tok = token_idx.repeat(w)
    rows = torch.cat([inp[0][token_idx] for inp in inputs])
    # Global order (expert, source rank, token) is every owner's buffer, owners in rank order.
    order = torch.argsort(e * (w * tokens) + src * tokens + tok)
    rows, e = rows[order], e[order]
    per_expert = torch.bincount(e, minlength=experts)
    chunks = rows.split(per_expert.view(w, local).sum(1).tolist())
    return [(chunks[r].clone(), per_expert[r * local:(r + 1) * local].clone()) for r in range(w)]
