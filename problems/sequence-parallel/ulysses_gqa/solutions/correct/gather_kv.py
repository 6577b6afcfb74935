"""Keys and values are small under GQA: all-gather them whole, move only q and the output through all-to-alls, and
pick the KV heads each local query head reads."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def _gather_seq(x, w):
    out = torch.empty((w * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous())
    return out


def solution(q, k, v):
    w, r = dist.get_world_size(), dist.get_rank()
    s_local, heads, d = q.shape
    kv_heads = k.shape[1]
    hl = heads // w
    sends = [c.contiguous() for c in q.chunk(w, dim=1)]  # head group j goes to rank j
    recvs = [torch.empty_like(sends[0]) for _ in range(w)]
    dist.all_to_all(recvs, sends)
    qh = torch.cat(recvs).transpose(0, 1)  # (H/W, S, D)
    kv_of = (torch.arange(r * hl, (r + 1) * hl, device=q.device) * kv_heads) // heads
    kh = _gather_seq(k, w)[:, kv_of].transpose(0, 1)
    vh = _gather_seq(v, w)[:, kv_of].transpose(0, 1)
    out = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)  # (H/W, S, D)
    sends = [c.contiguous() for c in out.transpose(0, 1).chunk(w, dim=0)]
    recvs = [torch.empty_like(sends[0]) for _ in range(w)]
    dist.all_to_all(recvs, sends)
    return torch.cat(recvs, dim=1)
