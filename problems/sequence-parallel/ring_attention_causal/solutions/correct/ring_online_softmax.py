import math

import torch
import torch.distributed as dist


def _block(q, k, v, causal):
    """Attention of q over one K/V block, (H, L, D) in float32: the normalised output and its log-sum-exp."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:  # the diagonal block: same positions for queries and keys
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse[..., None]) @ v, lse


def solution(q, k, v):
    w, r = dist.get_world_size(), dist.get_rank()
    qh = q.transpose(0, 1).float()
    kv = torch.stack([k, v]).contiguous()
    out = lse = None
    for step in range(w):
        if step < w - 1:
            nxt = torch.empty_like(kv)
            reqs = dist.batch_isend_irecv(
                [dist.P2POp(dist.isend, kv, (r + 1) % w), dist.P2POp(dist.irecv, nxt, (r - 1) % w)]
            )
        src = (r - step) % w  # the block in hand came from this rank
        if src <= r:
            o, l = _block(qh, kv[0].transpose(0, 1).float(), kv[1].transpose(0, 1).float(), causal=src == r)
            if out is None:
                out, lse = o, l
            else:
                new_lse = torch.logaddexp(lse, l)
                out = out * torch.exp(lse - new_lse)[..., None] + o * torch.exp(l - new_lse)[..., None]
                lse = new_lse
        if step < w - 1:
            for req in reqs:
                req.wait()
            kv = nxt
    return out.transpose(0, 1).to(q.dtype).contiguous()
