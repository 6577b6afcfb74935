"""Each rank ranks its own edges (no scores move), then only the int32 rankings are all-gathered, padded to the
largest count after an exchange of the counts."""

import torch
import torch.distributed as dist


def solution(pos_score, neg_score):
    w = dist.get_world_size()
    mine = (1 + (neg_score > pos_score[:, None]).sum(dim=1)).to(torch.int32)
    counts = torch.empty(w, dtype=torch.int64, device=mine.device)
    dist.all_gather_into_tensor(counts, torch.tensor([mine.numel()], device=mine.device))
    most = int(counts.max())
    padded = torch.zeros(most, dtype=torch.int32, device=mine.device)
    padded[: mine.numel()] = mine
    every = torch.empty(w * most, dtype=torch.int32, device=mine.device)
    dist.all_gather_into_tensor(every, padded)
    parts = [every[r * most : r * most + int(counts[r])] for r in range(w)]
    return torch.cat(parts).to(torch.int64)
