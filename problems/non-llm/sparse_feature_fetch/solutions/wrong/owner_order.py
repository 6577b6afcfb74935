"""Fetches the right rows but returns them grouped by owner rank instead of in request order."""

import torch
import torch.distributed as dist


def solution(features, offsets, ids):
    w, r = dist.get_world_size(), dist.get_rank()
    owner = torch.searchsorted(offsets[1:], ids, right=True)
    order = torch.argsort(owner, stable=True)
    send_counts = torch.bincount(owner, minlength=w)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    s_split, r_split = send_counts.tolist(), recv_counts.tolist()
    wanted = ids.new_empty((sum(r_split),))
    dist.all_to_all_single(wanted, ids[order], r_split, s_split)
    got = features.new_empty((ids.numel(), features.shape[1]))
    dist.all_to_all_single(got, features[wanted - offsets[r]], s_split, r_split)
    return got
