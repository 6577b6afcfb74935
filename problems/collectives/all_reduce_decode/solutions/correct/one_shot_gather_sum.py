"""One-shot: every layer, every rank gathers every rank's partial and sums them itself in float32, in rank order."""

import torch
import torch.distributed as dist


def solution(x, b):
    w = dist.get_world_size()
    layers, tokens, hidden = x.shape
    out = torch.empty_like(x)
    y = torch.zeros((tokens, hidden), dtype=torch.float32, device=x.device)
    every = torch.empty((w, tokens, hidden), dtype=x.dtype, device=x.device)
    for layer in range(layers):
        p = (x[layer].float() * torch.tanh(y + b[layer].float())).to(x.dtype)
        dist.all_gather_into_tensor(every.view(-1, hidden), p.contiguous())
        y = every.float().sum(dim=0)
        out[layer] = y.to(x.dtype)
    return out
