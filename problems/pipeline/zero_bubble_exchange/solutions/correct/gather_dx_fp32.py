"""Computes the weight gradients first in float32, then gathers every rank's input gradients and picks the ones that
feed this rank's stages."""

import torch
import torch.distributed as dist


def solution(x, w, dy):
    world, r = dist.get_world_size(), dist.get_rank()
    dw = torch.einsum("cth,ctk->chk", x.float(), dy.float())
    dx = torch.einsum("ctk,chk->cth", dy.float(), w.float()).to(dy.dtype).contiguous()
    every = torch.empty((world, *dx.shape), dtype=dx.dtype, device=dx.device)
    dist.all_gather_into_tensor(every.view(-1, dx.shape[-1]), dx.view(-1, dx.shape[-1]))

    def dx_of_stage(s):
        return every[s, 0] if s < world else every[2 * world - 1 - s, 1]

    dy_next = torch.zeros_like(dy)
    for c, s in enumerate((r, 2 * world - 1 - r)):
        if s + 1 < 2 * world:
            dy_next[c] = dx_of_stage(s + 1)
    return dy_next, dw
