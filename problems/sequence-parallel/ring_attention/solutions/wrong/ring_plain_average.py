"""Passes K/V around the ring correctly but averages the per-block outputs instead of weighting them by their softmax
mass (log-sum-exp)."""

import math

import torch
import torch.distributed as dist


def solution(q, k, v):
    w, r = dist.get_world_size(), dist.get_rank()
    qh = q.transpose(0, 1).float()
    kv = torch.stack([k, v]).contiguous()
    acc = torch.zeros_like(qh)
    for step in range(w):
        scores = qh @ kv[0].transpose(0, 1).float().transpose(-1, -2) / math.sqrt(q.shape[-1])
        acc += torch.softmax(scores, dim=-1) @ kv[1].transpose(0, 1).float()
        if step < w - 1:
            nxt = torch.empty_like(kv)
            for req in dist.batch_isend_irecv(
                [dist.P2POp(dist.isend, kv, (r + 1) % w), dist.P2POp(dist.irecv, nxt, (r - 1) % w)]
            ):
                req.wait()
            kv = nxt
    return (acc / w).transpose(0, 1).to(q.dtype).contiguous()
