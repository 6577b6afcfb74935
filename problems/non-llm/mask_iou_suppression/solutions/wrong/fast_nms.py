"""Wrong: "Fast NMS" (YOLACT): a mask is suppressed by any higher-scoring overlapping mask, kept or not."""

import torch
import torch.distributed as dist


def solution(masks, scores):
    w, rank = dist.get_world_size(), dist.get_rank()
    n = masks.shape[0]
    flat = masks.reshape(n, -1).contiguous()
    every = flat.new_empty((w * n, flat.shape[1]))
    dist.all_gather_into_tensor(every, flat)
    all_scores = scores.new_empty(w * n)
    dist.all_gather_into_tensor(all_scores, scores.contiguous())
    a = every.float()
    inter = (a @ a.t()).round().long()
    area = a.sum(1).long()
    over = 10 * inter > 7 * (area[:, None] + area[None, :] - inter)
    order = torch.argsort(all_scores, descending=True)
    m = w * n
    before = torch.triu(torch.ones((m, m), dtype=torch.bool, device=masks.device), diagonal=1)
    sup = over[order][:, order] & before
    first = torch.argmax(sup.to(torch.int8), dim=0)
    by_sorted = torch.where(sup.any(0), order[first], -1)
    out = torch.empty_like(by_sorted)
    out[order] = by_sorted
    return out[rank * n : (rank + 1) * n].clone()
