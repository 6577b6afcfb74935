"""Passes the running state rank to rank: rank r receives the decayed state of everything before it from r-1,
computes its shard in the quadratic (masked, decayed) form plus the incoming state's contribution, and sends its
end state on to r+1."""

import torch
import torch.distributed as dist


def solution(q, k, v, log_decay):
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, d = q.shape
    lam = log_decay.float()
    qf, kf, vf = (x.float().transpose(0, 1) for x in (q, k, v))  # (H, L, D)
    state = torch.zeros((heads, d, d), dtype=torch.float32, device=q.device)
    if r > 0:
        dist.recv(state, r - 1)
    t = torch.arange(n, device=q.device, dtype=torch.float32)
    diff = t[:, None] - t[None, :]
    weights = torch.where(diff >= 0, torch.exp(lam[:, None, None] * diff.clamp(min=0)), torch.zeros(()))
    out = ((qf @ kf.transpose(-1, -2)) * weights) @ vf
    out += (qf * torch.exp(lam[:, None] * (t + 1))[..., None]) @ state
    if r < w - 1:
        end = torch.exp(lam * n)[:, None, None] * state
        end += (kf * torch.exp(lam[:, None] * (n - 1 - t))[..., None]).transpose(-1, -2) @ vf
        dist.send(end.contiguous(), r + 1)
    return out.transpose(0, 1).to(q.dtype).contiguous()
