"""Two-shot all-reduce whose all-gather places the reduced blocks one rank off (block i lands at slot i+1)."""

import torch
import torch.distributed as dist


def _all_reduce(p):
    w = dist.get_world_size()
    flat = p.contiguous().view(-1)
    block = torch.empty(flat.numel() // w, dtype=p.dtype, device=p.device)
    dist.reduce_scatter_tensor(block, flat)
    gathered = torch.empty_like(flat)
    dist.all_gather_into_tensor(gathered, block)
    return gathered.view(w, -1).roll(1, dims=0).reshape(p.shape)


def solution(x, b):
    layers, tokens, hidden = x.shape
    out = torch.empty_like(x)
    y = torch.zeros((tokens, hidden), dtype=torch.float32, device=x.device)
    for layer in range(layers):
        p = _all_reduce((x[layer].float() * torch.tanh(y + b[layer].float())).to(x.dtype))
        out[layer] = p
        y = p.float()
    return out
