"""Sends contiguous sequence slices instead of head groups: the shape is right, the content is not."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    s_local, heads, d = x.shape
    recv = torch.empty_like(x)
    dist.all_to_all_single(recv, x.contiguous())
    return recv.reshape(w * s_local, heads // w, d)
