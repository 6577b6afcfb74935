"""Passes the shards around a ring with point-to-point messages and copies each into its column block."""

import torch
import torch.distributed as dist


def solution(x):
    w, r = dist.get_world_size(), dist.get_rank()
    c = x.shape[1]
    out = torch.empty((x.shape[0], w * c), dtype=x.dtype, device=x.device)
    cur, src = x.contiguous(), r
    out[:, src * c : (src + 1) * c] = cur
    for _ in range(w - 1):
        nxt = torch.empty_like(cur)
        for req in dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, cur, (r + 1) % w), dist.P2POp(dist.irecv, nxt, (r - 1) % w)]
        ):
            req.wait()
        cur, src = nxt, (src - 1) % w
        out[:, src * c : (src + 1) * c] = cur
    return out
