"""Right exchanges, but every query also sees the keys after it."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(q, k, v):
    w = dist.get_world_size()
    s_local, heads, d = q.shape
    hl = heads // w
    send = torch.stack([q, k, v]).reshape(3, s_local, w, hl, d).permute(2, 0, 1, 3, 4).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    qkv = recv.permute(1, 3, 0, 2, 4).reshape(3, hl, w * s_local, d)
    out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
    send = out.reshape(hl, w, s_local, d).permute(1, 2, 0, 3).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.permute(1, 0, 2, 3).reshape(s_local, heads, d)
