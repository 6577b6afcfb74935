"""One-shot: every rank all-gathers the float32 partials and sums them itself, in rank order, then adds the bias."""

import torch
import torch.distributed as dist


def solution(x, weight, bias):
    partial = (x @ weight.T).float()
    parts = torch.empty((dist.get_world_size(), *partial.shape), dtype=torch.float32, device=x.device)
    dist.all_gather_into_tensor(parts.view(-1, partial.shape[-1]), partial)
    return (parts.sum(dim=0) + bias.float()).to(x.dtype)
