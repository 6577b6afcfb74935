"""Gathers the raw shards around a ring with point-to-point messages, then rotates the whole sequence at once."""

import torch
import torch.distributed as dist


def _ring_gather(x):
    w, r = dist.get_world_size(), dist.get_rank()
    s = x.shape[0]
    out = torch.empty((w * s, *x.shape[1:]), dtype=x.dtype, device=x.device)
    out[r * s : (r + 1) * s] = x
    send_idx = r
    for _ in range(w - 1):
        recv_idx = (send_idx - 1) % w
        buf = torch.empty_like(x)
        for req in dist.batch_isend_irecv(
            [
                dist.P2POp(dist.isend, out[send_idx * s : (send_idx + 1) * s].contiguous(), (r + 1) % w),
                dist.P2POp(dist.irecv, buf, (r - 1) % w),
            ]
        ):
            req.wait()
        out[recv_idx * s : (recv_idx + 1) * s] = buf
        send_idx = recv_idx
    return out


def _rotate(x):
    s, d = x.shape[0], x.shape[-1]
    h = d // 2
    j = torch.arange(h, dtype=torch.float32, device=x.device)
    theta = torch.arange(s, dtype=torch.float32, device=x.device)[:, None] * torch.exp(
        j * (-2.0 / d) * torch.log(torch.tensor(10000.0, device=x.device))
    )
    c, sn = theta.cos()[:, None, None, :], theta.sin()[:, None, None, :]
    a, b = x[..., :h].float(), x[..., h:].float()
    return torch.cat([a * c - b * sn, b * c + a * sn], dim=-1).to(x.dtype)


def solution(q, k):
    return _rotate(_ring_gather(q)), _rotate(_ring_gather(k))
