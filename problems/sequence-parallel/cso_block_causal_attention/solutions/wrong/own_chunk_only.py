"""Wrong: each chunk's queries attend only to their own chunk's keys (block-diagonal instead of block-causal)."""

import math

import torch
import torch.distributed as dist


def solution(q, k, v):
    w = dist.get_world_size()
    dn, n, heads, d = q.shape
    kv = torch.stack([k, v]).contiguous()
    every = torch.empty((w * 2,) + kv.shape[1:], dtype=kv.dtype, device=kv.device)
    dist.all_gather_into_tensor(every, kv)
    every = every.view((w,) + kv.shape)
    every = every.permute(1, 2, 0, 3, 4, 5).reshape(2, dn * w * n, k.shape[2], d).float()
    group = heads // k.shape[2]
    keys = every[0].repeat_interleave(group, dim=1).transpose(0, 1)
    values = every[1].repeat_interleave(group, dim=1).transpose(0, 1)
    qs = q.reshape(dn * n, heads, d).float().transpose(0, 1)
    q_chunk = torch.arange(dn * n, device=q.device) // n
    k_chunk = torch.arange(dn * w * n, device=q.device) // (w * n)
    scores = qs @ keys.transpose(1, 2) / math.sqrt(d)
    scores = scores.masked_fill(k_chunk[None, None, :] != q_chunk[None, :, None], float("-inf"))
    out = torch.softmax(scores, dim=-1) @ values
    return out.transpose(0, 1).reshape(dn, n, heads, d).to(q.dtype)
