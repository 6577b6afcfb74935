"""Wrong: applies each token's decay after its delta-rule write instead of before (the write is then decayed too)."""

import torch
import torch.distributed as dist

TP = 2
_GROUPS = {}


def _pair():
    key = id(dist.group.WORLD)
    if key not in _GROUPS:
        w = dist.get_world_size()
        _GROUPS[key] = [dist.new_group([c * TP + t for t in range(TP)]) for c in range(w // TP)]
    return _GROUPS[key][dist.get_rank() // TP]


def _decay_write(state, gs, ks, vs, bs):
    err = vs - torch.einsum("hd,hde->he", ks, state)
    state = state + bs[:, None, None] * ks[:, :, None] * err[:, None, :]
    return torch.exp(gs)[:, :, None] * state


def solution(q, k, v, g, beta, wo):
    pair = _pair()
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, dk = q.shape
    state = torch.zeros((heads, dk, v.shape[-1]), dtype=torch.float32, device=q.device)
    if r >= TP:
        dist.recv(state, r - TP)
    o = torch.empty((n, heads, v.shape[-1]), dtype=torch.float32, device=q.device)
    for s in range(n):
        state = _decay_write(state, g[s].float(), k[s].float(), v[s].float(), beta[s].float())
        o[s] = torch.einsum("hd,hde->he", q[s].float(), state) / dk**0.5
    if r + TP < w:
        dist.send(state.contiguous(), r + TP)
    o = o.reshape(n, -1).to(q.dtype)
    os_ = torch.empty((TP * n, o.shape[1]), dtype=o.dtype, device=o.device)
    dist.all_gather_into_tensor(os_, o, group=pair)
    ws = torch.empty((TP * wo.shape[0], wo.shape[1]), dtype=wo.dtype, device=wo.device)
    dist.all_gather_into_tensor(ws, wo.contiguous(), group=pair)
    ws = ws.view(TP, wo.shape[0], wo.shape[1])
    y = sum(os_[t * n : (t + 1) * n].float() @ ws[t].float().t() for t in range(TP))
    return y.to(q.dtype)
