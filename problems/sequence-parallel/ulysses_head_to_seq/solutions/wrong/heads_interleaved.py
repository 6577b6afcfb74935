"""Puts the source rank on the inner head axis: head h of rank j lands at h*W + j instead of j*H/W + h."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    seq, hl, d = x.shape
    recv = torch.empty_like(x)
    dist.all_to_all_single(recv, x.contiguous())
    return recv.reshape(w, seq // w, hl, d).permute(1, 2, 0, 3).reshape(seq // w, w * hl, d)
