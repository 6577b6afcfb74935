"""Switch Transformer MoE layer with one expert per rank (experts = W) and a capacity per source rank.

Each rank keeps, for each expert, the first `capacity` of its tokens (token order) routed there; dropped tokens
get a zero output. Kept tokens go to the expert's rank, through relu(x @ w_in) @ w_out, come back, and are
scaled by their gate probability."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, expert_ids: torch.Tensor, gate: torch.Tensor, capacity: torch.Tensor,
             w_in: torch.Tensor, w_out: torch.Tensor):
    w = dist.get_world_size()
    cap = int(capacity)
    tokens, hidden = x.shape
    order = torch.argsort(expert_ids, stable=True)
    counts = torch.bincount(expert_ids, minlength=w)
    sorted_e = expert_ids[order]
    pos = torch.arange(tokens, device=x.device) - (torch.cumsum(counts, 0) - counts)[sorted_e]
    keep = pos < cap
    dest, slot, tok = sorted_e[keep], pos[keep], order[keep]
    send = x.new_zeros((w, cap, hidden))  # one fixed-size block per expert (= per rank)
    send[dest, slot] = x[tok]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    y = torch.relu(recv.view(w * cap, hidden) @ w_in) @ w_out  # zero padding rows stay zero
    back = torch.empty_like(send)
    dist.all_to_all_single(back, y.view(w, cap, hidden).contiguous())
    out = torch.zeros((tokens, hidden), dtype=torch.float32, device=x.device)
    out[tok] = back[dest, slot].float() * gate[tok, None]
    return out.to(x.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, ffn: int, capacity_factor: float):
    dt = dtype_of(dtype)
    # Top-1 of W experts; Switch's gate is the softmax probability of the chosen expert over all experts.
    top, g = skewed_router(seed, rank, device, tokens, world_size, world_size)
    probs = torch.softmax(top.values, dim=-1)
    expert_ids, gate = top.indices[:, 0].contiguous(), probs[:, 0].contiguous()
    x = randn((tokens, hidden), dt, device, g)
    w_in = randn((hidden, ffn), dt, device, g, scale=hidden ** -0.5)
    w_out = randn((ffn, hidden), dt, device, g, scale=(ffn / 2) ** -0.5)
    capacity = math.ceil(capacity_factor * tokens / world_size)
    return (x, expert_ids, gate, torch.tensor(capacity, dtype=torch.int64, device=device), w_in, w_out)


def oracle(inputs: list[tuple], **_):
    f64 = torch.float64
    outs = []
    for x, expert_ids, gate, capacity, _, _ in inputs:
        out = torch.zeros(x.shape, dtype=f64, device=x.device)
        used = [0] * len(inputs)
        for t in range(x.shape[0]):
            e = int(expert_ids[t])
            if used[e] < int(capacity):
                used[e] += 1
                w_in, w_out = inputs[e][4].to(f64), inputs[e][5].to(f64)
                out[t] = float(gate[t]) * (torch.relu(x[t].to(f64) @ w_in) @ w_out)
        outs.append(out.to(x.dtype))
    return outs
