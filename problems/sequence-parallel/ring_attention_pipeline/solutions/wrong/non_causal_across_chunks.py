"""Drops the causal mask: every position attends to the whole sequence of its stage, later chunks included."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(hidden, w_qkv, w_o, sizes):
    world, rank = dist.get_world_size(), dist.get_rank()
    cp, heads, chunk = (int(s) for s in sizes)
    stage, pos = divmod(rank, cp)
    if stage == 0:
        h = hidden
    else:
        h = torch.empty((hidden.shape[0], chunk, w_o.shape[0]), dtype=w_o.dtype, device=w_o.device)
        dist.recv(h, rank - cp)
    b = h.shape[0]
    qkv = (h @ w_qkv.t()).view(b, chunk, 3, heads, -1).permute(2, 0, 3, 1, 4)
    q, kv = qkv[0], qkv[1:].contiguous()
    every = [torch.empty_like(kv) for _ in range(cp)]
    base = stage * cp
    ops = []
    for j in range(cp):
        if j != pos:
            ops.append(dist.P2POp(dist.isend, kv, base + j))
            ops.append(dist.P2POp(dist.irecv, every[j], base + j))
    every[pos] = kv
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    k = torch.cat([e[0] for e in every], dim=2)
    v = torch.cat([e[1] for e in every], dim=2)
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=False)
    out = h + ctx.transpose(1, 2).reshape(b, chunk, -1) @ w_o.t()
    if stage + 1 < world // cp:
        dist.send(out.contiguous(), rank + cp)
    return out
