"""Right rows and counts, but the padded buffer is returned as received: (source, local expert, slot) order."""

import torch
import torch.distributed as dist


def solution(x, topk_ids, experts, capacity):
    w = dist.get_world_size()
    n_exp, cap = int(experts), int(capacity)
    local = n_exp // w
    k = topk_ids.shape[1]
    hidden = x.shape[1]
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=n_exp)
    start = torch.cumsum(counts, 0) - counts
    sorted_e = flat[order]
    pos = torch.arange(flat.numel(), device=x.device) - start[sorted_e]
    keep = pos < cap
    send = x.new_zeros((n_exp, cap, hidden))
    send[sorted_e[keep], pos[keep]] = x[order[keep] // k]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    kept = counts.clamp(max=cap)
    recv_kept = torch.empty_like(kept)
    dist.all_to_all_single(recv_kept, kept)
    return recv.reshape(local, w * cap, hidden), recv_kept.view(w, local).t().contiguous()
