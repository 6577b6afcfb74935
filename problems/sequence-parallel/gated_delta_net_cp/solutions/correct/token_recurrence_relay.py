"""Chains the ranks: rank r receives the state left by everything before it from r-1, runs the recurrence token by
token in fp32 (delta form: w = v - exp(g) M^T k, M = exp(g) M + beta k w^T) and sends its end state to r+1."""

import torch
import torch.distributed as dist


def solution(q, k, v, g, beta):
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, d = q.shape
    state = torch.zeros((heads, d, d), dtype=torch.float32, device=q.device)
    if r > 0:
        dist.recv(state, r - 1)
    qf, kf, vf = q.float(), k.float(), v.float()
    out = torch.empty((n, heads, d), dtype=torch.float32, device=q.device)
    for t in range(n):
        a = torch.exp(g[t].float())[:, None]
        err = vf[t] - a * torch.einsum("hd,hde->he", kf[t], state)
        state = a[..., None] * state + beta[t].float()[:, None, None] * kf[t][:, :, None] * err[:, None, :]
        out[t] = torch.einsum("hd,hde->he", qf[t], state)
    if r < w - 1:
        dist.send(state.contiguous(), r + 1)
    return out.to(q.dtype)
