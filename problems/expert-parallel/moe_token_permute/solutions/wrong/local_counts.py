"""Permutes correctly but returns the counts this rank SENDS (per destination rank and its experts) instead of the
counts it will RECEIVE for its own experts."""

import torch
import torch.distributed as dist


def solution(x, topk_ids, topk_weights, experts):
    experts = int(experts)
    w = dist.get_world_size()
    k = topk_ids.shape[1]
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    permuted = x.index_select(0, order // k)
    probs = topk_weights.reshape(-1).index_select(0, order)
    counts = torch.bincount(flat, minlength=experts)
    dist.barrier()
    return permuted, probs, counts.view(w, experts // w)
