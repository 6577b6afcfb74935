"""Ring backward with explicit flash-style formulas: K/V blocks travel forward around the ring together with fp32
dk/dv accumulators; each rank adds its queries' contribution to the block in hand, using the given out and lse.
A last hop brings each block's finished accumulator home."""

import math

import torch
import torch.distributed as dist


def _shift(t, w, r):
    got = torch.empty_like(t)
    ops = [dist.P2POp(dist.isend, t, (r + 1) % w), dist.P2POp(dist.irecv, got, (r - 1) % w)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return got


def solution(q, k, v, out, dout, lse):
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, d = q.shape
    scale = 1.0 / math.sqrt(d)
    qh = q.transpose(0, 1).float()
    doh = dout.transpose(0, 1).float()
    delta = (doh * out.transpose(0, 1).float()).sum(-1, keepdim=True)  # (H, n, 1)
    dq = torch.zeros_like(qh)
    kv = torch.stack([k, v]).contiguous()
    acc = torch.zeros((2, heads, n, d), dtype=torch.float32, device=q.device)
    tri = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    for step in range(w):
        src = (r - step) % w
        if src <= r:
            kh, vh = kv[0].transpose(0, 1).float(), kv[1].transpose(0, 1).float()
            s = qh @ kh.transpose(-1, -2) * scale
            if src == r:
                s = s.masked_fill(tri, float("-inf"))
            p = torch.exp(s - lse[..., None])
            ds = p * (doh @ vh.transpose(-1, -2) - delta)
            dq += ds @ kh * scale
            acc[0] += ds.transpose(-1, -2) @ qh * scale
            acc[1] += p.transpose(-1, -2) @ doh
        if step < w - 1:
            kv = _shift(kv, w, r)
            acc = _shift(acc.contiguous(), w, r)
    acc = _shift(acc.contiguous(), w, r)  # the block in hand is (r + 1)'s: pass it on, receive my own
    return (
        dq.transpose(0, 1).to(q.dtype).contiguous(),
        acc[0].transpose(0, 1).to(k.dtype).contiguous(),
        acc[1].transpose(0, 1).to(v.dtype).contiguous(),
    )
