"""One flat uneven all-to-all: each token once to each rank owning one of its experts (DeepEP's intranode path)."""

import torch
import torch.distributed as dist


def solution(x, topk_ids, topk_weights, experts, ranks_per_node):
    w, rank = dist.get_world_size(), dist.get_rank()
    local_experts = int(experts) // w
    tokens = x.shape[0]
    hit = torch.zeros((w, tokens), dtype=torch.bool, device=x.device)
    hit.scatter_(0, (topk_ids // local_experts).t(), True)
    dst, tok = torch.nonzero(hit, as_tuple=True)  # grouped by destination, token order inside
    counts = hit.sum(1)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    send, got = counts.tolist(), recv_counts.tolist()
    rows = x.new_empty((sum(got), x.shape[1]))
    dist.all_to_all_single(rows, x[tok].contiguous(), got, send)
    ids = topk_ids.new_empty((sum(got), topk_ids.shape[1]))
    dist.all_to_all_single(ids, topk_ids[tok].contiguous(), got, send)
    wts = topk_weights.new_empty((sum(got), topk_weights.shape[1]))
    dist.all_to_all_single(wts, topk_weights[tok].contiguous(), got, send)
    # Arrival order is already (source rank, token).
    local = ids - rank * local_experts
    mine = (local >= 0) & (local < local_experts)
    return (
        rows,
        torch.where(mine, local, -1),
        torch.where(mine, wts, 0.0),
        torch.bincount(local[mine], minlength=local_experts),
    )
