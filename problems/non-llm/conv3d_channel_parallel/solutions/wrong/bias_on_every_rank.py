"""Adds the bias inside each rank's partial convolution, so the all-reduce adds it W times."""

import torch.distributed as dist
import torch.nn.functional as F


def solution(x, weight, bias):
    partial = F.conv3d(x, weight, bias, stride=1, padding=1).float()
    dist.all_reduce(partial)
    return partial.to(x.dtype)
