"""Reduce-scatter the float32 partial output over output channels, add this rank's share of the bias, round, and
all-gather the rounded channels: half the bytes of a float32 all-reduce on the way back."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, weight, bias):
    w, rank = dist.get_world_size(), dist.get_rank()
    partial = F.conv3d(x, weight, None, stride=1, padding=1).float()
    c = partial.shape[1]
    per = c // w
    chunks = partial.transpose(0, 1).reshape(c, -1)  # channel-major, so a block of rows is a block of channels
    mine = torch.empty((per, chunks.shape[1]), dtype=torch.float32, device=x.device)
    dist.reduce_scatter_tensor(mine, chunks.contiguous())
    mine = (mine + bias[rank * per : (rank + 1) * per].float()[:, None]).to(x.dtype)
    full = torch.empty((c, chunks.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(full, mine)
    shape = (c, partial.shape[0], *partial.shape[2:])
    return full.view(shape).transpose(0, 1).contiguous()
