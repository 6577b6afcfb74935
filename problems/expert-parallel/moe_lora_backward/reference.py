"""Backward of per-expert LoRA adapters (weight gradients only) with experts sharded over ranks.

Expert e's adapter adds  y += p * SCALING * (x @ A_e) @ B_e  to the output of a token routed to it with router
weight p. Given the layer's output gradient g for each token, the owner of expert e needs
    dB_e = sum over its copies of  (x @ A_e)^T (SCALING * p * g)
    dA_e = sum over its copies of  x^T ((SCALING * p * g) @ B_e^T)
Experts are sharded contiguously: rank r holds experts [r*L, (r+1)*L), L = experts / W."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router

SCALING = 2.0  # lora_alpha / lora_rank, fixed by the statement


def solution(x, grad_out, topk_ids, topk_weights, lora_a, lora_b):
    w = dist.get_world_size()
    tokens, k = topk_ids.shape
    local, hidden, _ = lora_a.shape
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=local * w)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    in_splits = counts.view(w, local).sum(1).tolist()
    out_splits = recv_counts.view(w, local).sum(1).tolist()
    n = sum(out_splits)
    # One payload per copy: the token's x row next to its output-gradient row, plus its router weight.
    send = torch.cat([x, grad_out], dim=1).index_select(0, order // k)
    recv = x.new_empty((n, 2 * hidden))
    dist.all_to_all_single(recv, send, out_splits, in_splits)
    recv_p = topk_weights.new_empty((n,))
    dist.all_to_all_single(recv_p, topk_weights.reshape(-1)[order].contiguous(), out_splits, in_splits)
    expert_of_row = torch.repeat_interleave(torch.arange(local, device=x.device).repeat(w), recv_counts)
    grad_a = torch.empty(lora_a.shape, dtype=torch.float32, device=x.device)
    grad_b = torch.empty(lora_b.shape, dtype=torch.float32, device=x.device)
    for e in range(local):
        rows = (expert_of_row == e).nonzero().flatten()
        xe = recv[rows, :hidden].float()
        dy = recv[rows, hidden:].float() * (SCALING * recv_p[rows, None])
        a, b = lora_a[e].float(), lora_b[e].float()
        grad_b[e] = (xe @ a).t() @ dy
        grad_a[e] = xe.t() @ (dy @ b.t())
    return grad_a, grad_b


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, lora_rank: int, topk: int, experts: int):
    dt = dtype_of(dtype)
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    local = experts // world_size
    x = randn((tokens, hidden), dt, device, g)
    # Scaled so both gradients come out near unit size: an expert sees ~W*tokens*topk/experts copies of weight ~1/topk.
    copies = world_size * tokens * topk / experts
    grad_out = randn((tokens, hidden), dt, device, g, scale=topk / (SCALING * copies ** 0.5))
    lora_a = randn((local, hidden, lora_rank), dt, device, g, scale=hidden ** -0.5)
    lora_b = randn((local, lora_rank, hidden), dt, device, g, scale=hidden ** -0.5)
    return (x, grad_out, top.indices, torch.softmax(top.values, dim=-1), lora_a, lora_b)


def oracle(inputs: list[tuple], **_):
    f64 = torch.float64
    w = len(inputs)
    local, hidden, rank = inputs[0][4].shape
    a = torch.cat([inp[4] for inp in inputs]).to(f64)  # global expert order
    b = torch.cat([inp[5] for inp in inputs]).to(f64)
    ga = torch.zeros_like(a)
    gb = torch.zeros_like(b)
    for x, g, ids, wts, _, _ in inputs:
        for t in range(x.shape[0]):
            for slot in range(ids.shape[1]):
                e = int(ids[t, slot])
                xt = x[t].to(f64)
                dy = g[t].to(f64) * SCALING * float(wts[t, slot])
                gb[e] += torch.outer(xt @ a[e], dy)
                ga[e] += torch.outer(xt, b[e] @ dy)
    return [(ga[r * local:(r + 1) * local].float(), gb[r * local:(r + 1) * local].float()) for r in range(w)]
