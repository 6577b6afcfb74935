"""Correct: a token-by-token recurrence, each node's ranks waiting for the previous node's final state of their head
shard (point-to-point across nodes instead of an all-gather of state maps); each node exchanges attention outputs and
o_proj columns (all-gather) instead of all-reducing partial projections."""

import torch
import torch.distributed as dist

_GROUPS = {}


def _node(tp):
    key = (id(dist.group.WORLD), tp)
    if key not in _GROUPS:
        w = dist.get_world_size()
        _GROUPS[key] = [dist.new_group([c * tp + t for t in range(tp)]) for c in range(w // tp)]
    return _GROUPS[key][dist.get_rank() // tp]


def _decay_write(state, gs, ks, vs, bs):
    state = torch.exp(gs)[:, :, None] * state
    err = vs - torch.einsum("hd,hde->he", ks, state)
    return state + bs[:, None, None] * ks[:, :, None] * err[:, None, :]


def solution(q, k, v, g, beta, wo, ranks_per_node):
    tp = int(ranks_per_node)
    node = _node(tp)
    w, r = dist.get_world_size(), dist.get_rank()
    n, heads, dk = q.shape
    state = torch.zeros((heads, dk, v.shape[-1]), dtype=torch.float32, device=q.device)
    if r >= tp:
        dist.recv(state, r - tp)
    o = torch.empty((n, heads, v.shape[-1]), dtype=torch.float32, device=q.device)
    for s in range(n):
        state = _decay_write(state, g[s].float(), k[s].float(), v[s].float(), beta[s].float())
        o[s] = torch.einsum("hd,hde->he", q[s].float(), state) / dk**0.5
    if r + tp < w:
        dist.send(state.contiguous(), r + tp)
    o = o.reshape(n, -1).to(q.dtype)
    os_ = torch.empty((tp * n, o.shape[1]), dtype=o.dtype, device=o.device)
    dist.all_gather_into_tensor(os_, o, group=node)
    ws = torch.empty((tp * wo.shape[0], wo.shape[1]), dtype=wo.dtype, device=wo.device)
    dist.all_gather_into_tensor(ws, wo.contiguous(), group=node)
    ws = ws.view(tp, wo.shape[0], wo.shape[1])
    y = sum(os_[t * n : (t + 1) * n].float() @ ws[t].float().t() for t in range(tp))
    return y.to(q.dtype)
