"""Right rows and counts, but each expert's buffer is ordered by (token index, source rank) instead of (source rank,
token index)."""

import torch
import torch.distributed as dist


def solution(x, topk_ids, experts):
    experts = int(experts)
    w, r = dist.get_world_size(), dist.get_rank()
    tokens, k = topk_ids.shape
    local = experts // w
    hidden = x.shape[1]
    ids = torch.empty((w * tokens, k), dtype=topk_ids.dtype, device=x.device)
    dist.all_gather_into_tensor(ids, topk_ids.contiguous())
    xs = torch.empty((w * tokens, hidden), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(xs, x.contiguous())
    out = x.new_zeros((local, w * tokens, hidden))
    src = torch.full((local, w * tokens), -1, dtype=torch.int64, device=x.device)
    count = torch.zeros(local, dtype=torch.int64, device=x.device)
    token_major = torch.arange(w * tokens, device=x.device).view(w, tokens).t().reshape(-1)
    for e in range(local):
        hit = (ids[token_major] == r * local + e).any(dim=1)
        rows = token_major[hit]
        out[e, : rows.numel()] = xs[rows]
        src[e, : rows.numel()] = rows
        count[e] = rows.numel()
    return out, count, src
