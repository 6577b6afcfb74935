"""All-gathers the hidden states (every token on every rank) and projects them with only this rank's head columns
of the weight: no all-to-all, the same FLOPs per rank."""

import torch
import torch.distributed as dist


def solution(x, w_qkv):
    w, r = dist.get_world_size(), dist.get_rank()
    hidden, _, heads, d = w_qkv.shape
    hl = heads // w
    x_all = torch.empty((w * x.shape[0], hidden), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(x_all, x.contiguous())
    mine = w_qkv[:, :, r * hl : (r + 1) * hl].reshape(hidden, 3 * hl * d)
    out = (x_all @ mine).view(-1, 3, hl, d)
    return out.permute(1, 0, 2, 3).contiguous()
