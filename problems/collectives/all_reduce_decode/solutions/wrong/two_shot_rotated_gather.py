"""Two-shot all-reduce whose all-gather places the reduced blocks one rank off (block i lands at slot i+1)."""

import torch
import torch.distributed as dist


def solution(x):
    w = dist.get_world_size()
    flat = x.contiguous().view(-1)
    block = torch.empty(flat.numel() // w, dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(block, flat)
    gathered = torch.empty_like(flat)
    dist.all_gather_into_tensor(gathered, block)
    return gathered.view(w, -1).roll(1, dims=0).reshape(x.shape)
