"""MoE dispatch with a fixed capacity per expert and per source rank (Megatron's drop-and-pad mode).

Experts are sharded contiguously: rank r owns experts [r*L, (r+1)*L), L = experts / W. From each source rank an
expert keeps the first `capacity` (token, expert) pairs in token order and drops the rest. Each rank returns, per
local expert, W blocks of `capacity` rows (one per source rank), zero-padded, and the kept counts."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, topk_ids: torch.Tensor, experts: torch.Tensor, capacity: torch.Tensor):
    w = dist.get_world_size()
    n_exp, cap = int(experts), int(capacity)
    local = n_exp // w
    k = topk_ids.shape[1]
    hidden = x.shape[1]
    flat = topk_ids.reshape(-1)  # token-major, so a stable sort keeps token order inside each expert
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=n_exp)
    start = torch.cumsum(counts, 0) - counts
    sorted_e = flat[order]
    pos = torch.arange(flat.numel(), device=x.device) - start[sorted_e]  # arrival position inside its expert
    keep = pos < cap
    send = x.new_zeros((n_exp, cap, hidden))
    send[sorted_e[keep], pos[keep]] = x[order[keep] // k]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # equal splits: L experts x capacity rows per destination
    kept = counts.clamp(max=cap)
    recv_kept = torch.empty_like(kept)
    dist.all_to_all_single(recv_kept, kept)
    # Received as (source, local expert, slot); the contract is (local expert, source, slot).
    out = recv.view(w, local, cap, hidden).transpose(0, 1).reshape(local, w * cap, hidden)
    return out, recv_kept.view(w, local).t().contiguous()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, topk: int, experts: int, capacity: int):
    # Balanced routing: no per-expert bias, so every expert expects tokens*topk/experts pairs from each rank.
    top, g = skewed_router(seed, rank, device, tokens, experts, topk, bias_scale=0.0)
    x = randn((tokens, hidden), dtype_of(dtype), device, g)
    return (x, top.indices, torch.tensor(experts, dtype=torch.int64, device=device),
            torch.tensor(capacity, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    n_exp, cap = int(inputs[0][2]), int(inputs[0][3])
    local = n_exp // w
    hidden = inputs[0][0].shape[1]
    # buf[e, s, slot]: the slot-th token of source s (in token order) that chose global expert e, if slot < capacity.
    buf = inputs[0][0].new_zeros((n_exp, w, cap, hidden))
    kept = torch.zeros((n_exp, w), dtype=torch.int64)
    for s, (x, ids, _, _) in enumerate(inputs):
        for t in range(ids.shape[0]):
            for e in ids[t].tolist():
                if kept[e, s] < cap:
                    buf[e, s, kept[e, s]] = x[t]
                    kept[e, s] += 1
    dev = inputs[0][0].device
    return [(buf[r * local:(r + 1) * local].reshape(local, w * cap, hidden).clone(),
             kept[r * local:(r + 1) * local].to(dev).clone()) for r in range(w)]
