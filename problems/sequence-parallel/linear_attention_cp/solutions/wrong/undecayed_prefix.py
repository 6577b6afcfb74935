"""Wrong: adds up the earlier shards' states without decaying each by the shards that lie between it and this
rank (the decay inside each shard and to each position is right)."""

import torch
import torch.distributed as dist


def solution(q, k, v, log_decay):
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, d = q.shape
    lam = log_decay.float()
    qf, kf, vf = (x.float().transpose(0, 1) for x in (q, k, v))
    t = torch.arange(n, device=q.device, dtype=torch.float32)
    own = (kf * torch.exp(lam[:, None] * (n - 1 - t))[..., None]).transpose(-1, -2) @ vf
    states = [torch.empty_like(own) for _ in range(w)]
    dist.all_gather(states, own.contiguous())
    state = sum(states[:r], torch.zeros_like(own))
    diff = t[:, None] - t[None, :]
    weights = torch.where(diff >= 0, torch.exp(lam[:, None, None] * diff.clamp(min=0)), torch.zeros(()))
    out = ((qf @ kf.transpose(-1, -2)) * weights) @ vf
    out += (qf * torch.exp(lam[:, None] * (t + 1))[..., None]) @ state
    return out.transpose(0, 1).to(q.dtype).contiguous()
