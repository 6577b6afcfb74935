"""Gathers every layer in one all-gather of the stacked shards, then runs the blocks."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, *shards):
    world = dist.get_world_size()
    hidden, ffn = x.shape[1], 4 * x.shape[1]
    stacked = torch.stack(shards)  # [L, S]
    gathered = torch.empty((world,) + stacked.shape, dtype=stacked.dtype, device=stacked.device)
    dist.all_gather_into_tensor(gathered.view(-1, stacked.shape[1]), stacked)
    h = x
    for layer in range(len(shards)):
        flat = gathered[:, layer].reshape(-1)
        sizes = [ffn * hidden, ffn, hidden * ffn, hidden]  # the layer's parameters, packed in this order
        w1, b1, w2, b2 = flat[: sum(sizes)].split(sizes)
        w1, w2 = w1.view(ffn, hidden), w2.view(hidden, ffn)
        h = h + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2)
    return h
