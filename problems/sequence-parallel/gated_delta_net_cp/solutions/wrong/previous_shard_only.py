"""Wrong: starts each shard from the state the previous shard would reach from zero, ignoring what that shard itself
inherited (the chain over ranks is cut after one hop)."""

import torch
import torch.distributed as dist


def _run(q, k, v, g, beta, state):
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for t in range(q.shape[0]):
        a = torch.exp(g[t].float())[:, None]
        err = v[t].float() - a * torch.einsum("hd,hde->he", k[t].float(), state)
        state = a[..., None] * state + beta[t].float()[:, None, None] * k[t].float()[:, :, None] * err[:, None, :]
        out[t] = torch.einsum("hd,hde->he", q[t].float(), state)
    return out, state


def solution(q, k, v, g, beta):
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, d = q.shape
    zero = torch.zeros((heads, d, d), dtype=torch.float32, device=q.device)
    _, own = _run(q, k, v, g, beta, zero)
    every = [torch.empty_like(own) for _ in range(w)]
    dist.all_gather(every, own.contiguous())
    out, _ = _run(q, k, v, g, beta, every[r - 1] if r > 0 else zero)
    return out.to(q.dtype)
