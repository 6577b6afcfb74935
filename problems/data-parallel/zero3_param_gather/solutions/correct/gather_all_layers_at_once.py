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
        o = 0
        w1 = flat[o:o + ffn * hidden].view(ffn, hidden); o += ffn * hidden
        b1 = flat[o:o + ffn]; o += ffn
        w2 = flat[o:o + hidden * ffn].view(hidden, ffn); o += hidden * ffn
        b2 = flat[o:o + hidden]
        h = h + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2)
    return h
