"""MoE permute: local copies of each token grouped by expert, their router probs, and the count exchange
that tells each rank how many copies of each of its experts every other rank will send."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, experts: torch.Tensor):
    experts = int(experts)
    w = dist.get_world_size()
    k = topk_ids.shape[1]
    flat = topk_ids.reshape(-1)
    # Stable: within one expert the copies keep token order.
    order = torch.argsort(flat, stable=True)
    permuted = x.index_select(0, order // k)
    probs = topk_weights.reshape(-1).index_select(0, order)
    counts = torch.bincount(flat, minlength=experts)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    return permuted, probs, recv_counts.view(w, experts // w)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, topk: int, experts: int):
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    topk_ids, topk_weights = top.indices, torch.softmax(top.values, dim=-1)
    x = randn((tokens, hidden), dtype_of(dtype), device, g)
    return (x, topk_ids, topk_weights, torch.tensor(experts, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    experts = int(inputs[0][3])
    local = experts // w
    counts = torch.stack([torch.bincount(inp[1].reshape(-1), minlength=experts) for inp in inputs])  # (src, e)
    outs = []
    for r, (x, ids, wts, _) in enumerate(inputs):
        tokens, k = ids.shape
        tok = torch.arange(tokens, device=x.device).repeat_interleave(k)
        order = torch.argsort(ids.reshape(-1) * tokens + tok)  # (expert, token): keys are unique
        outs.append((x[tok[order]].clone(), wts.reshape(-1)[order].clone(),
                     counts[:, r * local:(r + 1) * local].clone()))
    return outs
