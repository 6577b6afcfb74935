"""Applies the capacity from the wrong end: each expert keeps the last `capacity` tokens instead of the first."""

import torch
import torch.distributed as dist


def solution(x, expert_ids, gate, capacity, w_in, w_out):
    w = dist.get_world_size()
    cap = int(capacity)
    tokens, hidden = x.shape
    rev = torch.arange(tokens - 1, -1, -1, device=x.device)
    ids = expert_ids[rev]
    order = rev[torch.argsort(ids, stable=True)]
    counts = torch.bincount(expert_ids, minlength=w)
    sorted_e = expert_ids[order]
    pos = torch.arange(tokens, device=x.device) - (torch.cumsum(counts, 0) - counts)[sorted_e]
    keep = pos < cap
    dest, slot, tok = sorted_e[keep], pos[keep], order[keep]
    send = x.new_zeros((w, cap, hidden))
    send[dest, slot] = x[tok]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    y = torch.relu(recv.view(w * cap, hidden) @ w_in) @ w_out
    back = torch.empty_like(send)
    dist.all_to_all_single(back, y.view(w, cap, hidden).contiguous())
    out = torch.zeros((tokens, hidden), dtype=torch.float32, device=x.device)
    out[tok] = back[dest, slot].float() * gate[tok, None]
    return out.to(x.dtype)
