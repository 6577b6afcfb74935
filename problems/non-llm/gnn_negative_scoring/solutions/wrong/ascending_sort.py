"""Ranks with the sort in the wrong direction: counts the negatives below the positive instead of above it."""

import torch
import torch.distributed as dist


def solution(pos_score, neg_score):
    w = dist.get_world_size()
    mine = 1 + (neg_score < pos_score[:, None]).sum(dim=1)
    counts = torch.empty(w, dtype=torch.int64, device=mine.device)
    dist.all_gather_into_tensor(counts, torch.tensor([mine.numel()], device=mine.device))
    most = int(counts.max())
    padded = torch.zeros(most, dtype=torch.int64, device=mine.device)
    padded[: mine.numel()] = mine
    every = torch.empty(w * most, dtype=torch.int64, device=mine.device)
    dist.all_gather_into_tensor(every, padded)
    return torch.cat([every[r * most : r * most + int(counts[r])] for r in range(w)])
