"""Simplest correct approach: all-gather every shard into the full logits and take the top k locally."""

import torch
import torch.distributed as dist


def solution(logits):
    world = dist.get_world_size()
    parts = [torch.empty_like(logits) for _ in range(world)]
    dist.all_gather(parts, logits.contiguous())
    return torch.cat(parts, dim=1).topk(50, dim=1, sorted=True)
