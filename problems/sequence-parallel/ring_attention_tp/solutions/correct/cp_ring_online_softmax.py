"""A ring over the CP group by point-to-point messages between global ranks r and r +- tp: each step attends the
local queries to the K/V block in hand with a mask built from global positions, merged by log-sum-exp."""

import math

import torch
import torch.distributed as dist


def _positions(cp_rank, cp, n, device):
    return torch.cat(
        [
            torch.arange(cp_rank * n, (cp_rank + 1) * n, device=device),
            torch.arange((2 * cp - 1 - cp_rank) * n, (2 * cp - cp_rank) * n, device=device),
        ]
    )


def solution(q, k, v, tp):
    tp = int(tp.item())
    w, r = dist.get_world_size(), dist.get_rank()
    cp, cp_rank = w // tp, r // tp
    n = q.shape[0] // 2
    qh = q.transpose(0, 1).float()  # (H, L, D)
    q_pos = _positions(cp_rank, cp, n, q.device)
    nxt_rank, prv_rank = (r + tp) % w, (r - tp) % w
    kv = torch.stack([k, v]).contiguous()
    out = lse = None
    for step in range(cp):
        if step < cp - 1:
            nxt = torch.empty_like(kv)
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, kv, nxt_rank), dist.P2POp(dist.irecv, nxt, prv_rank)])
        src = (cp_rank - step) % cp
        k_pos = _positions(src, cp, n, q.device)
        scores = qh @ kv[0].transpose(0, 1).float().transpose(-1, -2) / math.sqrt(q.shape[-1])
        masked = k_pos[None, :] > q_pos[:, None]
        scores = scores.masked_fill(masked, float("-inf"))
        blk_lse = torch.logsumexp(scores, dim=-1)  # -inf where a query row sees nothing of this block
        safe = torch.where(torch.isinf(blk_lse), torch.zeros_like(blk_lse), blk_lse)
        o = torch.exp(scores - safe[..., None]) @ kv[1].transpose(0, 1).float()
        if out is None:
            out, lse = o, blk_lse
        else:
            new = torch.logaddexp(lse, blk_lse)
            out = out * torch.exp(lse - new)[..., None] + o * torch.exp(blk_lse - new).nan_to_num(0.0)[..., None]
            lse = new
        if step < cp - 1:
            for req in reqs:
                req.wait()
            kv = nxt
    return out.transpose(0, 1).to(q.dtype).contiguous()
