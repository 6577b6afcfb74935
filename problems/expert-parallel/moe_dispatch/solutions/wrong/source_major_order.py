"""Exchanges the right rows but returns them as received, ordered (source rank, local expert, token)."""

import torch
import torch.distributed as dist


def solution(x, topk_ids, experts):
    experts = int(experts)
    w = dist.get_world_size()
    tokens, k = topk_ids.shape
    local = experts // w
    flat = topk_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    send = x.index_select(0, order // k)
    counts = torch.bincount(flat, minlength=experts)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    in_splits = counts.view(w, local).sum(1).tolist()
    out_splits = recv_counts.view(w, local).sum(1).tolist()
    recv = x.new_empty((sum(out_splits), x.shape[1]))
    dist.all_to_all_single(recv, send, out_splits, in_splits)
    return recv, recv_counts.view(w, local).sum(0)
