"""Pads every shard to the longest and returns the padded gather: zero rows sit between the ranks' runs."""

import torch
import torch.distributed as dist


def solution(x):
    w = dist.get_world_size()
    lengths = torch.empty(w, dtype=torch.int64, device=x.device)
    dist.all_gather_into_tensor(lengths, torch.tensor([x.shape[0]], dtype=torch.int64, device=x.device))
    total, most = int(lengths.sum()), int(lengths.max())
    padded = x.new_zeros((most, *x.shape[1:]))
    padded[:x.shape[0]] = x
    every = x.new_empty((w * most, *x.shape[1:]))
    dist.all_gather_into_tensor(every, padded)
    return every[:total].clone()
