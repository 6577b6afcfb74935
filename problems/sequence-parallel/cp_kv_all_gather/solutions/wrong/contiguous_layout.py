"""Treats the shards as contiguous blocks (rank r = positions r*S/W..), ignoring the load-balanced split."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right


def solution(q, k, v):
    w, r = dist.get_world_size(), dist.get_rank()
    s_local = q.shape[0]
    ks = [torch.empty_like(k) for _ in range(w)]
    vs = [torch.empty_like(v) for _ in range(w)]
    dist.all_gather(ks, k.contiguous())
    dist.all_gather(vs, v.contiguous())
    kk = torch.cat(ks[: r + 1]).transpose(0, 1)
    vv = torch.cat(vs[: r + 1]).transpose(0, 1)
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1), kk, vv, attn_mask=causal_lower_right(s_local, (r + 1) * s_local)
    )
    return out.transpose(0, 1).contiguous()
