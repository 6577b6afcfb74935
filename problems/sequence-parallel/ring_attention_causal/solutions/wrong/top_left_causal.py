"""Gathers the right K/V prefix but uses is_causal=True, whose mask is aligned to the top-left corner: local query i
then sees only keys 0..i instead of 0..r*S/W+i."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(q, k, v):
    w, r = dist.get_world_size(), dist.get_rank()
    s_local, heads, d = q.shape
    ks = [torch.empty_like(k) for _ in range(w)]
    vs = [torch.empty_like(v) for _ in range(w)]
    dist.all_gather(ks, k.contiguous())
    dist.all_gather(vs, v.contiguous())
    kk = torch.cat(ks[: r + 1]).transpose(0, 1)
    vv = torch.cat(vs[: r + 1]).transpose(0, 1)
    out = F.scaled_dot_product_attention(q.transpose(0, 1), kk, vv, is_causal=True)
    return out.transpose(0, 1).contiguous()
