"""Low-latency MoE dispatch (decode): token copies land in fixed-size per-expert buffers on the expert's owner.

Experts are sharded contiguously (rank r owns [r*L, (r+1)*L), L = experts / W). Each local expert gets a buffer
of W*tokens rows (room for every token of every rank); its received copies fill the first rows, sorted by
(source rank, source token), and the rest is zero."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, topk_ids: torch.Tensor, experts: torch.Tensor):
    experts = int(experts)
    w, r = dist.get_world_size(), dist.get_rank()
    tokens, k = topk_ids.shape
    local = experts // w
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)  # recv_counts[j*L + e]: copies from rank j for my expert e
    in_splits = counts.view(w, local).sum(1).tolist()
    out_splits = recv_counts.view(w, local).sum(1).tolist()
    n = sum(out_splits)
    recv = x.new_empty((n, x.shape[1]))
    dist.all_to_all_single(recv, x.index_select(0, order // k), out_splits, in_splits)
    src_id = torch.empty(n, dtype=torch.int64, device=x.device)
    dist.all_to_all_single(src_id, order // k + r * tokens, out_splits, in_splits)
    # Rows arrive grouped (source, expert) with tokens ascending; slot = rank of the row inside its expert.
    e_of_row = torch.repeat_interleave(torch.arange(local, device=x.device).repeat(w), recv_counts)
    perm = torch.argsort(e_of_row, stable=True)
    e_sorted = e_of_row[perm]
    per_expert = recv_counts.view(w, local).sum(0)
    slot = torch.arange(n, device=x.device) - (torch.cumsum(per_expert, 0) - per_expert)[e_sorted]
    out = x.new_zeros((local, w * tokens, x.shape[1]))
    out[e_sorted, slot] = recv[perm]
    src = torch.full((local, w * tokens), -1, dtype=torch.int64, device=x.device)
    src[e_sorted, slot] = src_id[perm]
    return out, per_expert, src


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
    tokens, hidden = inputs[0][0].shape
    device = inputs[0][0].device
    x_all = torch.cat([inp[0] for inp in inputs])  # row s*tokens + t
    ids_all = torch.cat([inp[1] for inp in inputs])
    outs = []
    for r in range(w):
        buf = x_all.new_zeros((local, w * tokens, hidden))
        src = torch.full((local, w * tokens), -1, dtype=torch.int64, device=device)
        count = torch.zeros(local, dtype=torch.int64, device=device)
        for e in range(local):
            rows = (ids_all == r * local + e).any(dim=1).nonzero().flatten()  # ascending = (source, token)
            buf[e, :rows.numel()] = x_all[rows]
            src[e, :rows.numel()] = rows
            count[e] = rows.numel()
        outs.append((buf, count, src))
    return outs
