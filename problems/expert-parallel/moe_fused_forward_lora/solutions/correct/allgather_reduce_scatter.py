"""All-gather dispatch: every rank sees every token, runs its local LoRA experts on the tokens that chose them, and
a reduce-scatter sums the weighted partial outputs onto the tokens' owners."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def _expert(x, w13, w2, a13, b13, a2, b2):
    h = x @ w13.t() + 0.5 * ((x @ a13.t()) @ b13.t())
    gate, up = h.chunk(2, dim=-1)
    act = F.silu(gate) * up
    return act @ w2.t() + 0.5 * ((act @ a2.t()) @ b2.t())


def solution(x, topk_ids, topk_weights, w13, w2, a13, b13, a2, b2):
    w, r = dist.get_world_size(), dist.get_rank()
    tokens, k = topk_ids.shape
    local = w13.shape[0]
    xs = torch.empty((w * tokens, x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(xs, x.contiguous())
    ids = torch.empty((w * tokens, k), dtype=topk_ids.dtype, device=x.device)
    dist.all_gather_into_tensor(ids, topk_ids.contiguous())
    wts = torch.empty((w * tokens, k), dtype=topk_weights.dtype, device=x.device)
    dist.all_gather_into_tensor(wts, topk_weights.contiguous())
    partial = torch.zeros((w * tokens, x.shape[1]), dtype=torch.float32, device=x.device)
    for e in range(local):
        t, slot = (ids == r * local + e).nonzero(as_tuple=True)
        if t.numel():
            y = _expert(xs[t], w13[e], w2[e], a13[e], b13[e], a2[e], b2[e]).float()
            partial.index_add_(0, t, y * wts[t, slot][:, None])
    out = torch.empty((tokens, x.shape[1]), dtype=torch.float32, device=x.device)
    dist.reduce_scatter_tensor(out, partial)
    return out.to(x.dtype)
